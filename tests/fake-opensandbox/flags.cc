#include "tests/fake-opensandbox/flags.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/fake-opensandbox/egress_policy.h"
#include "tests/fake-opensandbox/signed_route.h"

namespace fake_opensandbox {
namespace {

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long value = strtoll(text.c_str(), &end, 10);
  if (errno != 0 || !end || *end != '\0') return false;
  *out = value;
  return true;
}

std::vector<int> VersionParts(const std::string& version) {
  std::vector<int> parts;
  size_t i = 0;
  std::string v = version;
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V')) v = v.substr(1);
  while (i <= v.size()) {
    size_t dot = v.find('.', i);
    if (dot == std::string::npos) dot = v.size();
    parts.push_back(atoi(v.substr(i, dot - i).c_str()));
    i = dot + 1;
  }
  while (parts.size() < 3) parts.push_back(0);
  return parts;
}

}  // namespace

ExecdRelease ReleaseOf(const std::string& version) {
  const std::vector<int> v = VersionParts(version);
  auto since = [&v](int patch) { return v >= std::vector<int>{1, 0, patch}; };
  ExecdRelease release;
  release.keep_blank_lines = since(17);
  release.session_api = since(9) ? SessionApi::kCommand : since(8) ? SessionApi::kCode : SessionApi::kNone;
  release.pty_api = since(19) ? PtyApi::kFull : since(10) ? PtyApi::kBasic : PtyApi::kNone;
  release.mkdir_leaves_existing = since(19);
  release.chown_only_named = since(19);
  release.missing_path_404 = since(19);
  release.directory_list = since(19);
  release.file_info_type = since(19);
  release.deferred_stream_headers = since(17);
  release.interrupt_kills_group = since(18);
  return release;
}

std::string HelpText() {
  return R"(fake-opensandbox: a test double and dev server for the OpenSandbox lifecycle API
and execd. It has NO isolation: every "sandbox" is a directory on this host, and
commands run as real processes on this host, as this user (or as the uid a request
names). Run as root, a command is chrooted into its sandbox's directory (a mount
namespace with the host's system directories bound read-only), only so that it sees
the paths the files API maps; that is not a security boundary. Only ever run it on a
machine and as a user you are willing to expose.

It listens on 127.0.0.1 only and prints "listening on 127.0.0.1:PORT" first.

  --port N                 lifecycle port (0 = any free port; default 0)
  --api-key KEY            require OPEN-SANDBOX-API-KEY: KEY (default: no auth);
                           repeat to accept several keys
  --execd-version V        the execd release every sandbox plays (default 1.0.19;
                           1.0.8, 1.0.13 and 1.0.18 are the older profiles): blank
                           lines kept from 1.0.17; bash sessions from 1.0.8 (1.0.8's
                           run takes `code`); terminals from 1.0.10, takeover and
                           `command` from 1.0.19; before 1.0.19 POST /directories
                           chmods and chowns a directory that exists, a chmod without
                           owner chowns to execd's user, a missing path is a 500
                           and /directories/list does not exist (README.md)
  --egress-version V       the egress sidecar release of sandboxes created with a
                           networkPolicy (default 1.1.0): PATCH /policy from 1.0.2,
                           the rule limit from 1.0.4, DELETE from 1.0.13
  --egress-mode dns|dns+nft  the sidecar's enforcement mode it reports (default dns)
  --egress-max-rules N     the sidecar's rule limit (default 4096; 0: none)
  --clock-skew SECONDS     server clock = real clock + SECONDS (signed)
  --runtime docker|kubernetes
                           pause/resume and error-code flavour (default docker)
  --pending-polls N        new sandboxes answer Pending for N GETs (default 0)
  --execd-ready-after N    first N /ping calls per sandbox fail with 503 (default 2)
  --execd-token TOKEN      execd requires X-EXECD-ACCESS-TOKEN: TOKEN
  --execd-binary PATH      every sandbox runs this real execd (upstream's binary) in
                           a jail of its own (bubblewrap; needs root), started by
                           upstream's bootstrap.sh, instead of the fake's execd
  --execd-bootstrap PATH   that bootstrap.sh (default: bootstrap.sh beside the binary)
  --max-timeout SECONDS    largest create timeout / renew distance (default 86400)
  --root DIR               sandbox directories go to DIR/<id>/ (default: a fresh
                           temp dir, removed on exit)
  --keep-alive-timeout S   idle keep-alive timeout of the lifecycle listener (default 5)
  --sse-grace-ms MS        pause between the terminal event and end of stream (1000)
  --k8s-transition-ms MS   Pausing/Resuming duration with --runtime kubernetes (500)
  --faults JSON            initial fault injection (same keys as POST /_fake/faults)
  --exit-on-stdin-eof      exit when stdin closes (tie the fake to a parent process)
  --no-snapshots           the runtime has no snapshots: creating one is 501
                           SNAPSHOT::NOT_IMPLEMENTED
  --allowed-host-path P    host volumes may name P or a path under it (repeat for
                           more; default none: every host volume is refused, as
                           upstream's empty storage.allowed_host_paths refuses it)
  --without-program NAME   no image has NAME (repeatable): the host's copy is hidden
                           from every sandbox's commands (needs root)
  --pool NAME=IMAGE        with --runtime kubernetes: a Pool the server serves
                           (extensions.poolRef), whose pods run IMAGE (repeatable)
  --ingress-gateway wildcard|uri|header
                           with --runtime kubernetes: the server is in ingress
                           gateway mode with this route mode, and the fake runs the
                           gateway (endpoints name it; it routes to the sandboxes)
  --secure-access-keys ID=BASE64[,ID=BASE64...]
                           with --ingress-gateway: ingress.secure_access's signing
                           keys (ID one of [0-9a-z], BASE64 padded), shared by the
                           server and the gateway; allows secureAccess and signed
                           routes (?expires=)
  --secure-access-active-key ID
                           the key the server signs with (default: the first)
  --no-signed-routes       a server before 0.1.13: no signed routes, ?expires= is
                           ignored (the plain endpoint is answered)
  --help                   this text

Test control (no auth): GET /_fake/stats, GET|POST|DELETE /_fake/faults,
GET /_fake/sandboxes/<id>. See README.md.
)";
}

FlagsResult ParseFlags(int argc, char** argv, FakeConfig* config, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    size_t eq = flag.find('=');
    bool inline_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto need_value = [&]() -> bool {
      if (inline_value) return true;
      if (i + 1 >= argc) {
        *error = flag + " needs a value";
        return false;
      }
      value = argv[++i];
      return true;
    };
    auto need_int = [&](int64_t* out) -> bool {
      if (!need_value()) return false;
      if (!ParseInt(value, out)) {
        *error = flag + ": not an integer: " + value;
        return false;
      }
      return true;
    };
    int64_t number = 0;
    if (flag == "--help" || flag == "-h") return FlagsResult::kHelp;
    if (flag == "--port") {
      if (!need_int(&number)) return FlagsResult::kError;
      if (number < 0 || number > 65535) {
        *error = "--port must be 0..65535";
        return FlagsResult::kError;
      }
      config->port = static_cast<int>(number);
    } else if (flag == "--api-key") {
      if (!need_value()) return FlagsResult::kError;
      // Several keys: any of them is accepted, each sees every sandbox.
      if (config->api_key.empty()) {
        config->api_key = value;
      } else {
        config->more_api_keys.push_back(value);
      }
    } else if (flag == "--execd-version") {
      if (!need_value()) return FlagsResult::kError;
      config->execd_version = value;
    } else if (flag == "--egress-version") {
      if (!need_value()) return FlagsResult::kError;
      if (!EgressReleaseFor(value)) {
        *error = "--egress-version wants a release such as 1.1.0, got: " + value;
        return FlagsResult::kError;
      }
      config->egress_version = value;
    } else if (flag == "--egress-mode") {
      if (!need_value()) return FlagsResult::kError;
      if (value != "dns" && value != "dns+nft") {
        *error = "--egress-mode must be dns or dns+nft";
        return FlagsResult::kError;
      }
      config->egress_mode = value;
    } else if (flag == "--egress-max-rules") {
      if (!need_int(&number) || number < 0) {
        if (error->empty()) *error = "--egress-max-rules must be 0 or more";
        return FlagsResult::kError;
      }
      config->egress_max_rules = number;
    } else if (flag == "--clock-skew") {
      if (!need_int(&config->clock_skew_s)) return FlagsResult::kError;
    } else if (flag == "--runtime") {
      if (!need_value()) return FlagsResult::kError;
      if (value == "docker") {
        config->runtime = Runtime::kDocker;
      } else if (value == "kubernetes" || value == "k8s") {
        config->runtime = Runtime::kKubernetes;
      } else {
        *error = "--runtime must be docker or kubernetes";
        return FlagsResult::kError;
      }
    } else if (flag == "--pending-polls") {
      if (!need_int(&config->pending_polls)) return FlagsResult::kError;
    } else if (flag == "--execd-ready-after") {
      if (!need_int(&config->execd_ready_after)) return FlagsResult::kError;
    } else if (flag == "--execd-binary") {
      if (!need_value()) return FlagsResult::kError;
      config->execd_binary = value;
    } else if (flag == "--execd-bootstrap") {
      if (!need_value()) return FlagsResult::kError;
      config->execd_bootstrap = value;
    } else if (flag == "--execd-token") {
      if (!need_value()) return FlagsResult::kError;
      config->execd_token = value;
    } else if (flag == "--max-timeout") {
      if (!need_int(&config->max_timeout_s)) return FlagsResult::kError;
    } else if (flag == "--root") {
      if (!need_value()) return FlagsResult::kError;
      config->root_dir = value;
    } else if (flag == "--keep-alive-timeout") {
      if (!need_int(&number)) return FlagsResult::kError;
      config->keep_alive_timeout_s = static_cast<int>(number);
    } else if (flag == "--sse-grace-ms") {
      if (!need_int(&config->sse_grace_ms)) return FlagsResult::kError;
    } else if (flag == "--k8s-transition-ms") {
      if (!need_int(&config->k8s_transition_ms)) return FlagsResult::kError;
    } else if (flag == "--faults") {
      if (!need_value()) return FlagsResult::kError;
      config->faults_json = value;
    } else if (flag == "--exit-on-stdin-eof") {
      config->exit_on_stdin_eof = true;
    } else if (flag == "--no-snapshots") {
      config->snapshots = false;
    } else if (flag == "--without-program") {
      if (!need_value()) return FlagsResult::kError;
      config->programs_left_out.push_back(value);
    } else if (flag == "--allowed-host-path") {
      if (!need_value()) return FlagsResult::kError;
      config->allowed_host_paths.push_back(value);
    } else if (flag == "--pool") {
      if (!need_value()) return FlagsResult::kError;
      const size_t sep = value.find('=');
      if (sep == 0 || sep == std::string::npos || sep + 1 == value.size()) {
        *error = "--pool wants NAME=IMAGE, got: " + value;
        return FlagsResult::kError;
      }
      config->pools.emplace_back(value.substr(0, sep), value.substr(sep + 1));
    } else if (flag == "--ingress-gateway") {
      if (!need_value()) return FlagsResult::kError;
      if (value == "wildcard") {
        config->ingress_route_mode = IngressRouteMode::kWildcard;
      } else if (value == "uri") {
        config->ingress_route_mode = IngressRouteMode::kUri;
      } else if (value == "header") {
        config->ingress_route_mode = IngressRouteMode::kHeader;
      } else {
        *error = "--ingress-gateway must be wildcard, uri or header";
        return FlagsResult::kError;
      }
    } else if (flag == "--no-signed-routes") {
      config->signed_routes = false;
    } else if (flag == "--secure-access-keys") {
      if (!need_value()) return FlagsResult::kError;
      if (!ParseSigningKeys(value, &config->signing_keys, error)) return FlagsResult::kError;
    } else if (flag == "--secure-access-active-key") {
      if (!need_value()) return FlagsResult::kError;
      if (value.size() != 1) {
        *error = "--secure-access-active-key wants one character, got: " + value;
        return FlagsResult::kError;
      }
      config->active_signing_key = value[0];
    } else {
      *error = "unknown flag: " + flag + " (see --help)";
      return FlagsResult::kError;
    }
  }
  if (!config->pools.empty() && config->runtime != Runtime::kKubernetes) {
    *error = "--pool needs --runtime kubernetes (a Docker server has no pools)";
    return FlagsResult::kError;
  }
  // The server's own configuration checks (config.py): Docker only with ingress.mode =
  // direct, secure_access only in gateway mode, the active key one of the keys.
  if (config->ingress_route_mode != IngressRouteMode::kNone && config->runtime != Runtime::kKubernetes) {
    *error = "--ingress-gateway needs --runtime kubernetes (a Docker server has ingress.mode = direct)";
    return FlagsResult::kError;
  }
  if (!config->signing_keys.empty() && config->ingress_route_mode == IngressRouteMode::kNone) {
    *error = "--secure-access-keys needs --ingress-gateway (secure_access needs ingress.mode = gateway)";
    return FlagsResult::kError;
  }
  if (config->active_signing_key != 0) {
    bool known = false;
    for (const SigningKey& key : config->signing_keys) known = known || key.id == config->active_signing_key;
    if (!known) {
      *error = "--secure-access-active-key must be one of --secure-access-keys' ids";
      return FlagsResult::kError;
    }
  } else if (!config->signing_keys.empty()) {
    config->active_signing_key = config->signing_keys.front().id;
  }
  return FlagsResult::kRun;
}

}  // namespace fake_opensandbox
