// A set or map (Lazy) or a struct (Boxed) that costs one pointer until it
// is first used.
//
// A candidacy keeps several collections that are empty nearly always (its
// garbage, deletes on the wire, refused deletes, warnings said): 48 bytes
// each as std::set/std::map, in every one of a process's 100,000
// candidacies (issue 35's memory per election). Lazy<C> offers the part
// of C's interface the candidacy uses; clear() gives the memory back.
// Iterators are C's: while the container is unmade, begin() == end() of one
// empty container made for that purpose, so loops and find() == end() work
// as with C. Do not keep an end() across the first insertion.
#pragma once

#include <memory>

namespace zkelect {

template <class C>
class Lazy {
public:
    using iterator = typename C::iterator;
    using key_type = typename C::key_type;

    bool empty() const { return !c_ || c_->empty(); }
    size_t size() const { return c_ ? c_->size() : 0; }

    iterator begin() { return c_ ? c_->begin() : none().begin(); }
    iterator end() { return c_ ? c_->end() : none().end(); }
    iterator find(const key_type &k) { return c_ ? c_->find(k) : none().end(); }
    size_t count(const key_type &k) const { return c_ ? c_->count(k) : 0; }

    template <class V>
    auto insert(V &&v) {
        return made().insert(std::forward<V>(v));
    }
    auto &operator[](const key_type &k) { return made()[k]; }

    size_t erase(const key_type &k) { return c_ ? c_->erase(k) : 0; }
    // Keeps the container, so that the returned iterator stays good.
    iterator erase(iterator it) { return c_->erase(it); }

    void clear() { c_.reset(); }

private:
    C &made() {
        if (!c_) c_ = std::make_unique<C>();
        return *c_;
    }
    // One empty C per Lazy type, never written: the end() of an unmade one.
    static C &none() {
        static C empty;
        return empty;
    }

    std::unique_ptr<C> c_;
};

// A struct that costs one pointer until it is first written: get() reads
// T's defaults from one never-written T while unmade; mut() makes it.
template <class T>
class Boxed {
public:
    const T &get() const { return p_ ? *p_ : none(); }
    T &mut() {
        if (!p_) p_ = std::make_unique<T>();
        return *p_;
    }
    // Back to T's defaults, and the memory with them.
    void reset() { p_.reset(); }

private:
    static const T &none() {
        static const T empty{};
        return empty;
    }
    std::unique_ptr<T> p_;
};

}  // namespace zkelect
