// A Gloo process group for one rank of a job started by test/torch/run_ranks.py (AMP_RANK,
// AMP_WORLD_SIZE, AMP_STORE_DIR): a c10d::FileStore in that dir, loopback only. Shared by the
// distributed e2e programs, the multi-rank tests and the all-reduce benchmark. No AMP code here.
#pragma once

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace e2e {

inline int env_int(const char *name) {
  const char *v = std::getenv(name);
  if (!v)
    throw std::runtime_error(std::string(name) + " is not set: run under test/torch/run_ranks.py");
  return std::stoi(v);
}

inline int rank_from_env() { return env_int("AMP_RANK"); }
inline int world_size_from_env() { return env_int("AMP_WORLD_SIZE"); }

/// `name` keeps the store files of different groups of one job apart.
inline c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group_from_env(const std::string &name) {
  const char *dir = std::getenv("AMP_STORE_DIR");
  if (!dir)
    throw std::runtime_error("AMP_STORE_DIR is not set: run under test/torch/run_ranks.py");
  const int world = world_size_from_env();
  auto store = c10::make_intrusive<c10d::FileStore>(std::string(dir) + "/" + name, world);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = std::chrono::seconds(30);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank_from_env(), world, options);
}

} // namespace e2e
