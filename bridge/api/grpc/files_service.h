#pragma once
// Files: files in a sandbox (proto/files.proto) over core::Files, the same class the
// EPP/1 files.* methods use. Content travels as raw bytes, so there is no encoding
// parameter: what EPP/1 calls base64 is simply the bytes here.

#include "bridge/api/grpc/typed_call.h"
#include "bridge/api/grpc/typed_stream.h"
#include "proto/files.grpc.pb.h"

namespace abx::api {

class FilesService final : public abx::opensandbox::v1::Files::CallbackService {
 public:
  explicit FilesService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* Read(grpc::CallbackServerContext* context,
                    const abx::opensandbox::v1::ReadFileRequest* request,
                    abx::opensandbox::v1::ReadFileReply* reply) override;
  grpc::ServerUnaryReactor* Write(grpc::CallbackServerContext* context,
                     const abx::opensandbox::v1::WriteFileRequest* request,
                     abx::opensandbox::v1::WriteFileReply* reply) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                    const abx::opensandbox::v1::ListFilesRequest* request,
                    abx::opensandbox::v1::ListFilesReply* reply) override;
  grpc::ServerUnaryReactor* Stat(grpc::CallbackServerContext* context,
                    const abx::opensandbox::v1::StatFileRequest* request,
                    abx::opensandbox::v1::FileEntry* reply) override;
  grpc::ServerUnaryReactor* Mkdir(grpc::CallbackServerContext* context,
                     const abx::opensandbox::v1::MkdirRequest* request,
                     abx::opensandbox::v1::MkdirReply* reply) override;
  grpc::ServerUnaryReactor* Remove(grpc::CallbackServerContext* context,
                      const abx::opensandbox::v1::RemoveFileRequest* request,
                      abx::opensandbox::v1::RemoveFileReply* reply) override;
  grpc::ServerUnaryReactor* Move(grpc::CallbackServerContext* context,
                    const abx::opensandbox::v1::MoveFileRequest* request,
                    abx::opensandbox::v1::MoveFileReply* reply) override;
  grpc::ServerUnaryReactor* Search(grpc::CallbackServerContext* context,
                      const abx::opensandbox::v1::SearchFilesRequest* request,
                      abx::opensandbox::v1::SearchFilesReply* reply) override;
  grpc::ServerUnaryReactor* Chmod(grpc::CallbackServerContext* context,
                     const abx::opensandbox::v1::ChmodRequest* request,
                     abx::opensandbox::v1::ChmodReply* reply) override;
  grpc::ServerWriteReactor<abx::opensandbox::v1::FileChunk>* Download(
      grpc::CallbackServerContext* context, const abx::opensandbox::v1::DownloadFileRequest* request) override;
  grpc::ServerReadReactor<abx::opensandbox::v1::UploadChunk>* Upload(
      grpc::CallbackServerContext* context, abx::opensandbox::v1::UploadFileReply* reply) override;

  grpc::ServerWriteReactor<abx::opensandbox::v1::WatchEvent>* Watch(
      grpc::CallbackServerContext* context, const abx::opensandbox::v1::WatchRequest* request) override;
 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
