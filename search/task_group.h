// oneTBB's task hand-offs made visible to ThreadSanitizer.
//
// The distribution's libtbb is not built with -fsanitize=thread, so TSan sees none of the
// ordering that tbb::task_group::run/wait and task_arena::execute provide (TBB's queues and
// waits are its own atomics and futexes, compiled without instrumentation). Every write the
// driver makes before run() and every write a task makes before wait() returns would then look
// like a race. In TSan builds (and only there) the wrappers below state those edges with the
// sanitizer's annotation interface, at exactly the points where TBB guarantees them:
//   run(f):   release in the caller once TBB holds its copy of f, acquire when f begins;
//   f ends:   release(end tag) (also when f throws);
//   wait():   acquire(end tag) after every task has finished (also when wait rethrows).
// The release that opens a task sits at the end of the functor's constructors (TBB moves the
// functor into its task object, built last through defer()), the one that closes it after the
// functor returned. TBB's own writes to its task objects are not recorded (IgnoredAccesses):
// they are recycled through TBB's pools and read again by TBB's header code after the closing
// release, which no annotation point can cover.
// The same code runs in every build: in the others the annotations compile to nothing. Nothing
// else of TBB synchronises for the project (no parallel algorithms or concurrent containers);
// the cost cache's locks and counters are the project's own std::atomic and std::mutex, which
// TSan sees.
#pragma once

#include <type_traits>
#include <utility>

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#if defined(__SANITIZE_THREAD__)
#define ANNEALER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ANNEALER_TSAN 1
#endif
#endif
#ifdef ANNEALER_TSAN
#include <sanitizer/tsan_interface.h>
// The dynamic-annotation entry points of the TSan runtime (no header ships them); in GCC's and
// LLVM's runtimes both stop the recording of the thread's reads and writes.
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

namespace annealer {

// Everything the calling thread did before HappensBefore(tag) is visible (to TSan) to a thread
// after its HappensAfter(tag). No-ops unless built with ThreadSanitizer.
inline void HappensBefore([[maybe_unused]] const void* tag) {
#ifdef ANNEALER_TSAN
  __tsan_release(const_cast<void*>(tag));
#endif
}
inline void HappensAfter([[maybe_unused]] const void* tag) {
#ifdef ANNEALER_TSAN
  __tsan_acquire(const_cast<void*>(tag));
#endif
}

// The calling thread's plain memory accesses are not recorded while it lives (its
// synchronisation still is). Only around the construction of a TBB task object: TBB recycles
// those objects through its own pools, so the next task built in the same memory would
// otherwise seem to race with the worker that read the previous one's fields (its allocator,
// its wait context) in uninstrumented-order code after the task's closing release. What the
// functor itself is built there too (the references and pointers a driver lambda captures);
// what they point to, the project's data, is ordered by the start edge and stays recorded.
class IgnoredAccesses {
 public:
  IgnoredAccesses() {
#ifdef ANNEALER_TSAN
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
  }
  ~IgnoredAccesses() {
#ifdef ANNEALER_TSAN
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
#endif
  }
  IgnoredAccesses(const IgnoredAccesses&) = delete;
  IgnoredAccesses& operator=(const IgnoredAccesses&) = delete;
};

// A tbb::task_group (same scheduling, same exceptions) whose run/wait edges TSan sees.
class TaskGroup {
 public:
  template <typename F>
  void run(F&& f) {
    // Through defer(): its task object (unlike run(f)'s) constructs the functor last, so that
    // the release in the functor's constructor follows every write TBB makes to the task.
    tbb::task_handle handle;
    {
      const IgnoredAccesses ignored;
      handle = group_.defer(Task<std::decay_t<F>>(std::forward<F>(f), this));
    }
    group_.run(std::move(handle));
  }

  void wait() {
    struct Joined {
      const void* tag;
      ~Joined() { HappensAfter(tag); }
    } joined{&end_tag_};
    group_.wait();
  }

 private:
  // What TBB stores and runs. The start edge is tagged with the object's own address and
  // released at the end of every constructor: TBB moves the functor into its task object inside
  // run(), so a release before run() would leave those writes unordered with the worker's reads,
  // and a tag stored in a field could not be read before the acquire.
  template <typename F>
  class Task {
   public:
    Task(F f, TaskGroup* group) : f_(std::move(f)), group_(group) { HappensBefore(this); }
    Task(Task&& other) : f_(std::move(other.f_)), group_(other.group_) { HappensBefore(this); }
    Task(const Task& other) : f_(other.f_), group_(other.group_) { HappensBefore(this); }
    void operator()() const {
      HappensAfter(this);
      struct End {
        const void* tag;
        ~End() { HappensBefore(tag); }
      } end{&group_->end_tag_};
      f_();
    }

   private:
    F f_;
    TaskGroup* group_;
  };

  tbb::task_group group_;
  char end_tag_ = 0;  // only its address matters
};

// arena.execute(f) with the edges caller -> f and f -> caller stated (TBB may run f on another
// thread when the caller cannot join the arena).
template <typename F>
void ExecuteIn(tbb::task_arena& arena, F&& f) {
  char tag = 0;
  HappensBefore(&tag);
  arena.execute([&] {
    HappensAfter(&tag);
    struct End {
      const void* tag;
      ~End() { HappensBefore(tag); }
    } end{&tag};
    f();
  });
  HappensAfter(&tag);
}

}  // namespace annealer
