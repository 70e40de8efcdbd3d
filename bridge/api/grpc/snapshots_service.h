#pragma once
// Snapshots: the typed snapshots (proto/snapshots.proto) over core::Snapshots, the class
// the EPP/1 sandbox.snapshot and snapshot.* methods use.

#include "bridge/api/grpc/typed_call.h"
#include "proto/snapshots.grpc.pb.h"

namespace abx::api {

class SnapshotsService final : public abx::opensandbox::v1::Snapshots::CallbackService {
 public:
  explicit SnapshotsService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* Take(grpc::CallbackServerContext* context,
                                 const abx::opensandbox::v1::TakeSnapshotRequest* request,
                                 abx::opensandbox::v1::Snapshot* reply) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const abx::opensandbox::v1::GetSnapshotRequest* request,
                                abx::opensandbox::v1::Snapshot* reply) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const abx::opensandbox::v1::ListSnapshotsRequest* request,
                                 abx::opensandbox::v1::ListSnapshotsReply* reply) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const abx::opensandbox::v1::DeleteSnapshotRequest* request,
                                   abx::opensandbox::v1::DeleteSnapshotReply* reply) override;

 private:
  TypedDeps deps_;
};

}  // namespace abx::api
