// QueueWork: runs `work` on libuv's thread pool, then `done` on the loop thread. The request
// and both functions live on the heap until `done` has run, so no caller writes the
// uv_work_t bookkeeping (or a raw new/delete) again. `work` must not touch loop-thread state;
// move what it needs into its captures and out through them. Loop thread only (to queue).
#pragma once

#include <uv.h>

#include <functional>
#include <memory>

namespace trainwatch {

// Returns libuv's status (0, or an error when the work could not be queued; then neither
// function runs).
inline int QueueWork(uv_loop_t* loop, std::function<void()> work, std::function<void()> done) {
  struct Request {
    uv_work_t request{};
    std::function<void()> work;
    std::function<void()> done;
  };
  auto owned = std::make_unique<Request>();
  owned->work = std::move(work);
  owned->done = std::move(done);
  owned->request.data = owned.get();
  const int status = uv_queue_work(
      loop, &owned->request,
      [](uv_work_t* request) { static_cast<Request*>(request->data)->work(); },
      [](uv_work_t* request, int) {
        const std::unique_ptr<Request> finished(static_cast<Request*>(request->data));
        finished->done();
      });
  if (status == 0) {
    static_cast<void>(owned.release());  // freed by the after-work callback
  }
  return status;
}

}  // namespace trainwatch
