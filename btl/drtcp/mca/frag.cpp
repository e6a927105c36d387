// btl drtcp send descriptors: two size classes, cached free lists, one
// allocation per frag (struct and data buffer together).
#include <new>

#include "btl.hpp"

namespace btl::drtcp::mca {

void FragPool::init(std::size_t small, std::size_t large, std::size_t cache) {
    small_ = small;
    large_ = large < small ? small : large;
    cache_ = cache;
}

Frag* FragPool::get(std::size_t bytes) {
    if (bytes > large_)
        return nullptr;
    const bool is_small = bytes <= small_;
    {
        std::lock_guard lock(lock_);
        auto& list = is_small ? free_small_ : free_large_;
        if (!list.empty()) {
            Frag* f = list.back();
            list.pop_back();
            return f;
        }
    }
    const std::size_t cap = is_small ? small_ : large_;
    void* mem = std::malloc(sizeof(Frag) + cap);
    if (mem == nullptr)
        return nullptr;
    auto* f = new (mem) Frag;
    OBJ_CONSTRUCT(&f->base, mca_btl_base_descriptor_t);
    f->capacity = cap;
    f->data = reinterpret_cast<std::uint8_t*>(f + 1);
    return f;
}

void FragPool::put(Frag* f) {
    if (f == nullptr)
        return;
    {
        std::lock_guard lock(lock_);
        auto& list = f->capacity <= small_ ? free_small_ : free_large_;
        if (list.size() < cache_) {
            list.push_back(f);
            return;
        }
    }
    OBJ_DESTRUCT(&f->base);
    f->~Frag();
    std::free(f);
}

void FragPool::clear() {
    std::lock_guard lock(lock_);
    for (auto* list : {&free_small_, &free_large_}) {
        for (Frag* f : *list) {
            OBJ_DESTRUCT(&f->base);
            f->~Frag();
            std::free(f);
        }
        list->clear();
    }
}

}  // namespace btl::drtcp::mca
