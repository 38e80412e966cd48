#!/usr/bin/env python3
"""Writes a C++ translation unit whose analysis stresses one shape of code, N units long.

Shapes (each beside one canonical training step, so that the tool analyses the file):
  plus     a `Str("x") + to_str(0) + ... ` chain of N operator+ calls
  shift    a `os << a << b ...` chain of N operator<< calls
  call     an `opts.add()("a", 1)("b", 2)...` chain of N operator() calls (program_options style)
  lambda   N lambdas nested in one another, each calling the next
  template a class template instantiated N levels deep (Deep<N> calls Deep<N-1>)

Usage: gen_chain.py SHAPE N > file.cpp   (uses the mock headers: -I test/Inputs/mock-torch)
"""
import sys

STEP = r'''
struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(int epochs, double max_norm) {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::amp::GradScaler scaler;
  torch::Tensor data, target;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      auto output = model->forward(data);
      loss = torch::nll_loss(output, target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
    scaler.step(optimizer);
    scaler.update();
  }
}
'''

PRELUDE = r'''#include <torch/torch.h>
#include "scaler.h"

struct Str {
  Str(const char *);
  Str operator+(const Str &) const;
};
Str to_str(int);
struct Out {
  Out &operator<<(const Str &);
  Out &operator<<(int);
};
struct Options {
  Options &operator()(const char *, int);
  Options &add();
};
'''


def plus(n):
    terms = ['Str("x")'] + ['to_str(%d)' % i for i in range(n)]
    return 'Str chain() { return ' + ' + '.join(terms) + '; }\n'


def shift(n):
    return 'void chain(Out &os) { os' + ''.join(' << to_str(%d)' % i for i in range(n)) + '; }\n'


def call(n):
    return 'void chain(Options &o) { o.add()' + ''.join('("o%d", %d)' % (i, i) for i in range(n)) + '; }\n'


def lambda_(n):
    body = 'return to_str(0);'
    for i in range(n):
        body = 'auto f%d = [&]() { %s }; return f%d();' % (i, body, i)
    return 'Str chain() { ' + body + ' }\n'


def template(n):
    return ('template <int K> struct Deep { static Str run() { return Deep<K - 1>::run() + to_str(K); } };\n'
            'template <> struct Deep<0> { static Str run() { return to_str(0); } };\n'
            'Str chain() { return Deep<%d>::run(); }\n' % n)


SHAPES = {'plus': plus, 'shift': shift, 'call': call, 'lambda': lambda_, 'template': template}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SHAPES:
        sys.exit(__doc__)
    sys.stdout.write(PRELUDE + SHAPES[sys.argv[1]](int(sys.argv[2])) + STEP)


if __name__ == '__main__':
    main()
