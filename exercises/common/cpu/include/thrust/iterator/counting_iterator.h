// thrust::counting_iterator for the CPU self-check: the indices a harness reduces over, read by subscript.
#pragma once

namespace thrust {

template <class T>
class counting_iterator {
public:
    explicit counting_iterator(T first) : first_(first) {}
    template <class Index>
    T operator[](Index i) const {
        return static_cast<T>(first_ + i);
    }

private:
    T first_;
};

}  // namespace thrust
