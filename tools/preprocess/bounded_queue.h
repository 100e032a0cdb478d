// A blocking FIFO with a capacity, closable from any side: the backbone of the ordered
// reader -> workers -> writer pipeline (capacity bounds memory whatever the input size).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

namespace mt::preprocess {

template <class T>
class BoundedQueue {
  public:
    explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}

    // Blocks while full; false (item dropped) once closed.
    bool push(T item) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
        if (closed_) return false;
        items_.push_back(std::move(item));
        not_empty_.notify_one();
        return true;
    }

    // Blocks while empty; false once closed and drained.
    bool pop(T& item) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
        if (items_.empty()) return false;
        item = std::move(items_.front());
        items_.pop_front();
        not_full_.notify_one();
        return true;
    }

    // No more pushes; pops drain what is left.
    void close() {
        std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        not_full_.notify_all();
        not_empty_.notify_all();
    }

  private:
    std::mutex mutex_;
    std::condition_variable not_full_, not_empty_;
    std::deque<T> items_;
    size_t capacity_;
    bool closed_ = false;
};

}  // namespace mt::preprocess
