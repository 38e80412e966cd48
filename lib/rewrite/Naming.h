// Fresh names for what the rewrite declares (grads, grad_fn, converted models, members), and what
// the steps of one function share while they are planned.
#pragma once

#include "ampmigrate/TrainingStep.h"
#include "clang/AST/DeclCXX.h"
#include "llvm/ADT/StringSet.h"
#include <map>
#include <string>

namespace ampmigrate {

/// Every name declared or referenced in a function (its lambdas and generic lambdas'
/// instantiations included, a method's class members too): what a fresh name must avoid.
llvm::StringSet<> namesIn(const clang::FunctionDecl *FD);

/// `Base`, or `Base2`, `Base3`, ... : the first that `Used` does not hold (then it does).
std::string freshName(llvm::StringSet<> &Used, llvm::StringRef Base);

/// What the converted form of a model is called before it is made fresh: `amp_self` for `*this`,
/// else `amp_<name>` without a member's trailing underscore (`net_` -> `amp_net`).
std::string convertedModelBase(const ObjectRef &M);

/// The name of a new member of `Class` holding a split step's grads: `grads_`, or another that no
/// member of the class has.
std::string freshMemberName(const clang::CXXRecordDecl *Class);

/// What the steps of one function share while they are planned: the names taken, and the models
/// converted once before a loop, keyed by model and insertion offset, so that two steps of one
/// loop (a GAN's discriminator and generator steps) convert a model they both run under one name
/// with one declaration (planMigrations joins their insertions). The one mutable state planners
/// are handed, explicitly.
struct FunctionPlanning {
  llvm::StringSet<> UsedNames;
  struct Conversion {
    std::string Name; ///< the converted model's variable
    std::string Line; ///< its declaration, indented, with its newline
  };
  std::map<std::pair<const clang::ValueDecl *, unsigned>, Conversion> Conversions;
};

} // namespace ampmigrate
