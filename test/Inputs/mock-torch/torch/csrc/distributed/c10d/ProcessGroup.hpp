// Mock of c10d's process group (torch/csrc/distributed/c10d/ProcessGroup.hpp): what data-parallel
// libtorch training calls on it.
#pragma once
#include <torch/torch.h>
#include <vector>

namespace c10 {
template <class T> class intrusive_ptr {
public:
  T *operator->() const;
  T &operator*() const;
  explicit operator bool() const;
};
} // namespace c10

namespace c10d {
struct AllreduceOptions {};
class Work {
public:
  bool wait();
};
class ProcessGroup {
public:
  virtual ~ProcessGroup();
  c10::intrusive_ptr<Work> allreduce(std::vector<at::Tensor> &tensors,
                                     const AllreduceOptions &opts = AllreduceOptions());
  int getRank() const;
  int getSize() const;
};
} // namespace c10d
