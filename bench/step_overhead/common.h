// What the step-overhead programs share: the MLP, the data, the command line, the timing and the
// peak resident memory report. Only the training step differs between before.cpp and after.cpp.
#pragma once

#include <torch/torch.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace bench {

struct Args {
  int input = 512, hidden = 1024, layers = 2, batch = 64, steps = 60, warmup = 10;
  std::string mode; ///< before: hand | aten (the scaler); after: O0 | O1 (the level)
  bool autocast = true; ///< before only: the original's autocast scope (off: the O0 comparison)
};

inline Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char *key) -> const char * {
      const std::size_t n = std::strlen(key);
      return s.compare(0, n, key) == 0 ? s.c_str() + n : nullptr;
    };
    if (const char *v = value("--input="))
      a.input = std::atoi(v);
    else if (const char *v = value("--hidden="))
      a.hidden = std::atoi(v);
    else if (const char *v = value("--layers="))
      a.layers = std::atoi(v);
    else if (const char *v = value("--batch="))
      a.batch = std::atoi(v);
    else if (const char *v = value("--steps="))
      a.steps = std::atoi(v);
    else if (const char *v = value("--warmup="))
      a.warmup = std::atoi(v);
    else if (const char *v = value("--mode="))
      a.mode = v;
    else if (const char *v = value("--autocast="))
      a.autocast = std::atoi(v) != 0;
    else {
      std::fprintf(stderr, "unknown argument %s\n", s.c_str());
      std::exit(2);
    }
  }
  return a;
}

/// input -> hidden (x layers, ReLU) -> 10, log-softmax.
struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const Args &a) {
    int in = a.input;
    for (int i = 0; i < a.layers; ++i) {
      hidden.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(in, a.hidden)));
      in = a.hidden;
    }
    out = register_module("out", torch::nn::Linear(in, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto &fc : hidden)
      x = torch::relu(fc->forward(x));
    return torch::log_softmax(out->forward(x), 1);
  }
  std::vector<torch::nn::Linear> hidden;
  torch::nn::Linear out{nullptr};
};
TORCH_MODULE(Mlp);

struct Data {
  torch::Tensor inputs, targets;
};

inline Data make_data(const Args &a) {
  torch::manual_seed(7);
  Data d;
  d.inputs = torch::randn({16 * a.batch, a.input});
  d.targets = d.inputs.matmul(torch::randn({a.input, 10})).argmax(1);
  return d;
}

using Clock = std::chrono::steady_clock;

/// Times `step(i)` for warmup + steps iterations; prints the median of the timed steps, the peak
/// resident set of the process (getrusage: the whole run, library loading included) and the last
/// loss (a check that both programs train the same way).
template <class Step> int run(const Args &a, const char *what, Step &&step) {
  std::vector<double> ms;
  double loss = 0.0;
  for (int i = 0; i < a.warmup + a.steps; ++i) {
    const auto t0 = Clock::now();
    loss = step(i);
    const auto t1 = Clock::now();
    if (i >= a.warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("{\"program\": \"%s\", \"median_ms\": %.4f, \"peak_rss_mb\": %.1f, "
              "\"last_loss\": %.5f}\n",
              what, ms.empty() ? 0.0 : ms[ms.size() / 2], ru.ru_maxrss / 1024.0, loss);
  return 0;
}

} // namespace bench
