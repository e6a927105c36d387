// A FIFO of trivially copyable values in one power-of-two ring that doubles
// when full: push and pop are a store or a load and a mask, with no
// allocation once it has grown to its working size (std::deque frees and
// allocates a 512-byte node every few dozen elements that pass through it,
// and allocates one even while empty).
//
// Nothing is allocated until the first push, so idle queues (one per source
// rank of every communicator) cost three words; a ring grown past
// kKeepCapacity by a burst is freed once the burst has drained. The ring's
// index mask is kept, not derived from a vector's size (a division by the
// element size on every access).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace plugin::common {

template <typename T>
class RingQueue {
    static_assert(std::is_trivially_copyable_v<T>, "RingQueue moves elements by copying them");

  public:
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept {
        return ring_ ? mask_ + std::size_t{1} : 0;
    }

    // i-th element from the front; i < size().
    T& operator[](std::size_t i) noexcept { return ring_[(head_ + i) & mask_]; }
    const T& operator[](std::size_t i) const noexcept { return ring_[(head_ + i) & mask_]; }
    T& front() noexcept { return ring_[head_]; }
    const T& front() const noexcept { return ring_[head_]; }

    void push_back(const T& v) {
        if (size_ == capacity())
            grow();
        ring_[(head_ + size_) & mask_] = v;
        ++size_;
    }
    // Not empty.
    void pop_front() noexcept {
        head_ = (head_ + 1) & mask_;
        if (--size_ == 0)
            emptied();
    }
    // Removes the i-th element (i < size()), keeping the others' order.
    void erase(std::size_t i) noexcept {
        for (; i + 1 < size_; ++i)
            (*this)[i] = (*this)[i + 1];
        if (--size_ == 0)
            emptied();
    }
    void clear() noexcept {
        size_ = 0;
        emptied();
    }

    // Rings up to this many elements are kept while empty (the working size
    // of a busy queue); larger ones are freed.
    static constexpr std::size_t kKeepCapacity = 256;

    // Index of the first element for which pred holds; size() if none.
    template <typename Pred>
    [[nodiscard]] std::size_t find_if(Pred&& pred) const {
        for (std::size_t i = 0; i < size_; ++i)
            if (pred((*this)[i]))
                return i;
        return size_;
    }

  private:
    void emptied() noexcept {
        head_ = 0;
        if (capacity() > kKeepCapacity) {
            ring_.reset();
            mask_ = 0;
        }
    }

    void grow() {
        const std::size_t cap = ring_ ? 2 * capacity() : kFirstCapacity;
        auto bigger = std::make_unique<T[]>(cap);
        for (std::size_t i = 0; i < size_; ++i)
            bigger[i] = (*this)[i];
        ring_ = std::move(bigger);
        mask_ = static_cast<std::uint32_t>(cap - 1);
        head_ = 0;
    }

    static constexpr std::size_t kFirstCapacity = 8;  // a power of two, as every later size
    std::unique_ptr<T[]> ring_;
    std::uint32_t mask_ = 0;  // capacity - 1 while ring_ is allocated
    std::uint32_t head_ = 0;
    std::size_t size_ = 0;
};

}  // namespace plugin::common
