#!/usr/bin/env bash
# GPU part of the libtorch binding's proof (called by the device script; results to stdout):
#   1. O2 fp16 end to end on CUDA: a before-form program (CUDA autocast + a hand-written scaler +
#      clip) and its migrated form (amp::auto_mixed_precision O2 fp16, value_and_grad, amp::GradScaler)
#      train the same MLP; loss curves side by side, the loss must fall comparably, parameters fp32.
#   2. Step time of a matmul-bound MLP at O0 (fp32) vs O2 (fp16), goal >= 2.5x on an H200.
# Needs a CUDA libtorch: AMP_TORCH_ROOT=<...>/torch, else the python3 torch module's, else
# /opt/amp-deps/torch-2.*/torch (with its CUDA runtime libraries loadable). Never run here: the
# machine it was written on has no GPU.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=${AMP_E2E_GPU_BUILD:-/tmp/amp-e2e-gpu}
JOBS=${AMP_JOBS:-$(nproc)}

torch_root=${AMP_TORCH_ROOT:-}
if [[ -z $torch_root ]]; then
  torch_root=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null || true)
fi
if [[ -z $torch_root ]]; then
  torch_root=$(ls -d /opt/amp-deps/torch-2.*/torch 2>/dev/null | head -n1 || true)
fi
if [[ -z $torch_root || ! -f $torch_root/lib/libtorch_cuda.so ]]; then
  echo "e2e_gpu: no CUDA libtorch found (set AMP_TORCH_ROOT=<...>/torch)"; exit 1
fi
echo "e2e_gpu: libtorch at $torch_root"

mkdir -p "$WORK/src"
cat > "$WORK/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(amp-e2e-gpu VERSION 0.1.0 LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 17)
include(GNUInstallDirs)
set(AMP_WARNING_FLAGS -Wall -Wextra)
set(AMP_BUILD_TORCH ON)
add_subdirectory($ROOT/runtime runtime)
add_executable(e2e_gpu e2e_gpu.cpp)
target_link_libraries(e2e_gpu PRIVATE amp::torch)
set_target_properties(e2e_gpu PROPERTIES BUILD_RPATH "\${AMP_TORCH_RPATH}")
EOF

cat > "$WORK/src/e2e_gpu.cpp" <<'EOF'
// O2 fp16 e2e on CUDA and O0 vs O2 step time (see bench/device/e2e_gpu.sh).
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <amp/torch.h>

#include <chrono>
#include <cstdio>
#include <vector>

struct MlpImpl : torch::nn::Module {
  MlpImpl(int in, int width, int depth, int out) {
    int prev = in;
    for (int i = 0; i < depth; ++i) {
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(prev, width)));
      prev = width;
    }
    head = register_module("head", torch::nn::Linear(prev, out));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({prev})));
  }
  torch::Tensor forward(const torch::Tensor &x) {
    auto h = x;
    for (auto &l : layers) h = torch::relu(l->forward(h));
    return torch::log_softmax(head->forward(norm->forward(h)), 1);
  }
  std::vector<torch::nn::Linear> layers;
  torch::nn::Linear head{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(Mlp);

/// The before form's scaler (a hand-written port of Python's GradScaler, host-side scale).
struct OwnScaler {
  double scale = 1024.0; int tracker = 0; bool inf = false;
  void unscale(torch::optim::Optimizer &opt) {
    torch::NoGradGuard g;
    for (auto &p : opt.parameters()) {
      if (!torch::isfinite(p.grad()).all().item<bool>()) inf = true;
      p.mutable_grad().mul_(1.0 / scale);
    }
  }
  void step(torch::optim::Optimizer &opt) { if (!inf) opt.step(); }
  void update() { if (inf) { scale *= 0.5; tracker = 0; } else if (++tracker == 2000) { scale *= 2; tracker = 0; } inf = false; }
};

struct Data {
  torch::Tensor x, y;
  Data(int n, int in, int classes) {
    torch::manual_seed(1234);
    x = torch::randn({n, in}, torch::kCUDA);
    y = x.matmul(torch::randn({in, classes}, torch::kCUDA)).argmax(1);
  }
};

std::vector<double> train_before(Data &d, int steps) {
  torch::manual_seed(0);
  Mlp model(256, 512, 3, 10);
  model->to(torch::kCUDA);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  OwnScaler scaler;
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    auto x = d.x.narrow(0, (s * 128) % 4096, 128), y = d.y.narrow(0, (s * 128) % 4096, 128);
    opt.zero_grad();
    at::autocast::set_autocast_dtype(at::kCUDA, at::kHalf);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    at::autocast::clear_cache();
    (loss * scaler.scale).backward();
    scaler.unscale(opt);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(opt);
    scaler.update();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

std::vector<double> train_after(Data &d, int steps, bool *params_fp32) {
  torch::manual_seed(0);
  Mlp model(256, 512, 3, 10);
  model->to(torch::kCUDA);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kHalf);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    auto data = d.x.narrow(0, (s * 128) % 4096, 128), target = d.y.narrow(0, (s * 128) % 4096, 128);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    grads = amp::clip_by_global_norm(grads, 1.0);
    scaler.step(optimizer, grads);
    scaler.update();
    losses.push_back(loss.item<double>());
  }
  *params_fp32 = true;
  for (const auto &p : optimizer.parameters())
    *params_fp32 = *params_fp32 && p.scalar_type() == torch::kFloat && p.is_cuda();
  return losses;
}

double ms_per_step(bool amp_o2, int width, int batch) {
  torch::manual_seed(0);
  Mlp model(width, width, 4, 1000);
  model->to(torch::kCUDA);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(1e-3).momentum(0.9));
  auto x = torch::randn({batch, width}, torch::kCUDA);
  auto y = torch::randint(0, 1000, {batch}, torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA));
  amp::GradScaler scaler;
  auto amp_model = amp::auto_mixed_precision(model, amp_o2 ? amp::Level::O2 : amp::Level::O0, torch::kHalf);
  auto one_step = [&] {
    if (!amp_o2) {
      optimizer.zero_grad();
      torch::nll_loss(model->forward(x), y).backward();
      optimizer.step();
      return;
    }
    auto grad_fn = amp::value_and_grad([&] {
      return scaler.scale(torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y));
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.step(optimizer, grads);
    scaler.update();
  };
  for (int i = 0; i < 3; ++i) one_step();
  torch::cuda::synchronize();
  const int iters = 10;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) one_step();
  torch::cuda::synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

int main() {
  if (!torch::cuda::is_available()) { std::printf("e2e_gpu: CUDA is not available to libtorch\n"); return 1; }
  int status = 0;
  Data d(4096, 256, 10);
  const int steps = 60;
  auto before = train_before(d, steps);
  bool fp32 = false;
  auto after = train_after(d, steps, &fp32);
  std::printf("== O2 fp16 e2e on CUDA\n%5s %10s %10s\n", "step", "original", "O2 fp16");
  for (int s = 0; s < steps; s += 5) std::printf("%5d %10.5f %10.5f\n", s, before[s], after[s]);
  auto drop = [](const std::vector<double> &l) {
    double a = 0, b = 0; for (int i = 0; i < 5; ++i) { a += l[i]; b += l[l.size() - 1 - i]; }
    return (a - b) / a; };
  std::printf("relative loss drop: original %.3f, O2 fp16 %.3f; params fp32 on CUDA: %s\n",
              drop(before), drop(after), fp32 ? "yes" : "NO");
  bool ok = fp32 && drop(after) >= 0.5 * drop(before) && drop(before) > 0;
  std::printf("e2e O2 fp16: %s\n", ok ? "PASS" : "FAIL");
  status |= ok ? 0 : 1;

  std::printf("== step time, MLP 4 x 8192 wide + head, batch 8192, SGD momentum\n");
  double o0 = ms_per_step(false, 8192, 8192);
  double o2 = ms_per_step(true, 8192, 8192);
  std::printf("O0 fp32: %.2f ms/step   O2 fp16: %.2f ms/step   speedup %.2fx (goal >= 2.5x): %s\n",
              o0, o2, o0 / o2, o0 / o2 >= 2.5 ? "PASS" : "BELOW GOAL");
  return status;
}
EOF

cmake -S "$WORK/src" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_root/share/cmake/Torch" \
      -DAMP_ENABLE_CUDA=ON -DAMP_TORCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$WORK/build" -j"$JOBS" --target e2e_gpu
LD_LIBRARY_PATH="$torch_root/lib:${LD_LIBRARY_PATH:-}" "$WORK/build/e2e_gpu"
