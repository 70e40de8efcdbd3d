#include "tests/fake-opensandbox/fault_state.h"

#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace fake_opensandbox {
namespace {

bool ReadNumber(const rapidjson::Value& v, double* out) {
  if (v.IsBool()) {
    *out = v.GetBool() ? 1 : 0;
    return true;
  }
  if (v.IsNumber()) {
    *out = v.GetDouble();
    return true;
  }
  if (v.IsNull()) {
    *out = 0;
    return true;
  }
  return false;
}

}  // namespace

Faults FaultState::Get() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return faults_;
}

void FaultState::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_ = Faults();
}

bool FaultState::Update(const std::string& json, std::string* error) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    *error = "faults must be a JSON object";
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Faults next = faults_;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string key = it->name.GetString();
    double value = 0;
    if (!ReadNumber(it->value, &value)) {
      *error = "fault '" + key + "' needs a number or a boolean";
      return false;
    }
    if (key == "latency_ms") {
      next.latency_ms = static_cast<int64_t>(value);
    } else if (key == "error_rate") {
      next.error_rate = value;
    } else if (key == "reset_stream_after_events") {
      next.reset_stream_after_events = static_cast<int64_t>(value);
    } else if (key == "garbage_body") {
      next.garbage_body = value;
    } else if (key == "never_running") {
      next.never_running = value != 0;
    } else if (key == "execd_down") {
      next.execd_down = value != 0;
    } else if (key == "silent") {
      next.silent = value != 0;
    } else if (key == "kernel_dies_mid_run") {
      next.kernel_dies_mid_run = value != 0;
    } else if (key == "slow_interrupt_ms") {
      next.slow_interrupt_ms = static_cast<int64_t>(value);
    } else if (key == "pty_drop_after_bytes") {
      next.pty_drop_after_bytes = static_cast<int64_t>(value);
    } else if (key == "pty_stale_hold_ms") {
      next.pty_stale_hold_ms = static_cast<int64_t>(value);
    } else if (key == "pty_refuse_upgrade") {
      next.pty_refuse_upgrade = value != 0;
    } else if (key == "proxy_ws_unreachable") {
      next.proxy_ws_unreachable = value != 0;
    } else if (key == "snapshot_fails") {
      next.snapshot_fails = value != 0;
    } else if (key == "snapshot_capture_ms") {
      next.snapshot_capture_ms = static_cast<int64_t>(value);
    } else if (key == "start_ms") {
      next.start_ms = static_cast<int64_t>(value);
    } else if (key == "refuse_creates") {
      next.refuse_creates = value != 0;
    } else if (key == "proxy_internal_errors") {
      next.proxy_internal_errors = static_cast<int64_t>(value);
    } else if (key == "gateway_clock_ahead_s") {
      next.gateway_clock_ahead_s = static_cast<int64_t>(value);
    } else if (key == "gateway_clock_at_s") {
      next.gateway_clock_at_s = static_cast<int64_t>(value);
    } else if (key == "pty_stall_reads_ms") {
      next.pty_stall_reads_ms = static_cast<int64_t>(value);
    } else if (key == "download_cut_after_bytes") {
      next.download_cut_after_bytes = static_cast<int64_t>(value);
    } else if (key == "download_change_on_cut") {
      next.download_change_on_cut = value != 0;
    } else if (key == "upload_fail_after_bytes") {
      next.upload_fail_after_bytes = static_cast<int64_t>(value);
    } else if (key == "transfer_ms_per_mib") {
      next.transfer_ms_per_mib = static_cast<int64_t>(value);
    } else if (key == "pty_exit_overtakes_bytes") {
      next.pty_exit_overtakes_bytes = static_cast<int64_t>(value);
    } else {
      *error = "unknown fault '" + key + "'";
      return false;
    }
  }
  faults_ = next;
  return true;
}

std::string FaultState::ToJson() const {
  Faults f = Get();
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("latency_ms");
  w.Int64(f.latency_ms);
  w.Key("error_rate");
  w.Double(f.error_rate);
  w.Key("reset_stream_after_events");
  w.Int64(f.reset_stream_after_events);
  w.Key("garbage_body");
  w.Double(f.garbage_body);
  w.Key("never_running");
  w.Bool(f.never_running);
  w.Key("execd_down");
  w.Bool(f.execd_down);
  w.Key("silent");
  w.Bool(f.silent);
  w.Key("kernel_dies_mid_run");
  w.Bool(f.kernel_dies_mid_run);
  w.Key("slow_interrupt_ms");
  w.Int64(f.slow_interrupt_ms);
  w.Key("pty_drop_after_bytes");
  w.Int64(f.pty_drop_after_bytes);
  w.Key("pty_stale_hold_ms");
  w.Int64(f.pty_stale_hold_ms);
  w.Key("pty_refuse_upgrade");
  w.Bool(f.pty_refuse_upgrade);
  w.Key("proxy_ws_unreachable");
  w.Bool(f.proxy_ws_unreachable);
  w.Key("snapshot_fails");
  w.Bool(f.snapshot_fails);
  w.Key("snapshot_capture_ms");
  w.Int64(f.snapshot_capture_ms);
  w.Key("start_ms");
  w.Int64(f.start_ms);
  w.Key("refuse_creates");
  w.Bool(f.refuse_creates);
  w.Key("proxy_internal_errors");
  w.Int64(f.proxy_internal_errors);
  w.Key("gateway_clock_ahead_s");
  w.Int64(f.gateway_clock_ahead_s);
  w.Key("gateway_clock_at_s");
  w.Int64(f.gateway_clock_at_s);
  w.Key("pty_stall_reads_ms");
  w.Int64(f.pty_stall_reads_ms);
  w.Key("download_cut_after_bytes");
  w.Int64(f.download_cut_after_bytes);
  w.Key("download_change_on_cut");
  w.Bool(f.download_change_on_cut);
  w.Key("upload_fail_after_bytes");
  w.Int64(f.upload_fail_after_bytes);
  w.Key("transfer_ms_per_mib");
  w.Int64(f.transfer_ms_per_mib);
  w.Key("pty_exit_overtakes_bytes");
  w.Int64(f.pty_exit_overtakes_bytes);
  w.EndObject();
  return buffer.GetString();
}

bool FaultState::TakeProxyInternalError() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (faults_.proxy_internal_errors <= 0) return false;
  --faults_.proxy_internal_errors;
  return true;
}

bool FaultState::Roll(double rate) {
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  return std::uniform_real_distribution<double>(0, 1)(rng_) < rate;
}

// With --execd-binary the real execd answers: a switch that acts inside the fake's own
// execd would change nothing, and a test relying on it would pass for the wrong reason.
bool FaultsAllowedWithRealExecd(const std::string& json, std::string* error) {
  static const char* const kInsideExecd[] = {
      "reset_stream_after_events", "execd_down", "kernel_dies_mid_run", "slow_interrupt_ms",
      "pty_drop_after_bytes", "pty_stale_hold_ms", "pty_refuse_upgrade", "pty_stall_reads_ms",
      "pty_exit_overtakes_bytes", "download_cut_after_bytes", "download_change_on_cut",
      "upload_fail_after_bytes", "transfer_ms_per_mib"};
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return true;  // Update() says what is wrong
  for (const char* key : kInsideExecd) {
    auto it = doc.FindMember(key);
    if (it == doc.MemberEnd()) continue;
    const bool off = (it->value.IsBool() && !it->value.GetBool()) || (it->value.IsNumber() && it->value.GetDouble() == 0);
    if (!off) {
      *error = std::string("fault '") + key +
               "' acts inside the fake's own execd; this fake runs the real execd (--execd-binary)";
      return false;
    }
  }
  return true;
}


}  // namespace fake_opensandbox
