#include "trainer.h"

static double total(const torch::Tensor &g) { return g.sum().item<double>(); }

void Trainer::log_grads() {
  for (auto &p : model->parameters())
    total(p.grad());
}

void Trainer::log_step() { total(torch::Tensor()); }
