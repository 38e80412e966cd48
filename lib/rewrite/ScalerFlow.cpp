// The scaler held outside the step function: every declaration it flows through changes type.
#include "ScalerTypePlanner.h"
#include "ampmigrate/ScalerUses.h"
#include "ScalerSpellings.h"
#include "clang/AST/ParentMapContext.h"

using namespace clang;

namespace ampmigrate {

bool ScalerTypePlanner::collectSpellings(const Stmt *S, const CXXRecordDecl *Class) {
  TypeLocFinder TF(Class);
  ConstructFinder CF(Class);
  TF.walk(S);
  CF.walk(S);
  llvm::append_range(FlowTypeRanges, TF.Ranges);
  llvm::append_range(FlowConstructs, CF.Constructs);
  llvm::append_range(FlowMakeCalls, CF.MakeCalls);
  return !TF.Ranges.empty() || !CF.Constructs.empty() || !CF.MakeCalls.empty();
}

bool ScalerTypePlanner::isScalerCallOn(const Expr *R, const ValueDecl *H) const {
  for (const FunctionAnalysis &F : TU.Functions)
    for (const ScalerCall &C : F.ScalerCalls) {
      if (!C.Scaler.Decl || C.Scaler.Decl->getCanonicalDecl() != H->getCanonicalDecl())
        continue;
      SourceRange CR = C.Call->getSourceRange();
      if (!SM.isPointWithin(R->getBeginLoc(), CR.getBegin(), CR.getEnd()))
        continue;
      if (C.Kind != ScalerCall::Method::Unscale && C.Kind != ScalerCall::Method::Step)
        return true;
      for (const TrainingStep &S : F.Steps)
        if (llvm::is_contained(S.Steps, &C) || llvm::is_contained(S.Unscales, &C))
          return true;
      return false;
    }
  return false;
}

namespace {

/// `std::map<std::string, double>`: the state dict of the target's scaler (PyTorch's keys).
bool isStateDictType(QualType T) {
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl());
  if (!Spec || qualifiedName(Spec->getSpecializedTemplate()) != "std::map" ||
      Spec->getTemplateArgs().size() < 2)
    return false;
  QualType Key = Spec->getTemplateArgs()[0].getAsType(), Value = Spec->getTemplateArgs()[1].getAsType();
  const auto *KeySpec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(Key->getAsCXXRecordDecl());
  return KeySpec && qualifiedName(KeySpec->getSpecializedTemplate()) == "std::basic_string" &&
         KeySpec->getTemplateArgs()[0].getAsType()->isSpecificBuiltinType(BuiltinType::Char_S) &&
         Value->isSpecificBuiltinType(BuiltinType::Double);
}

class StringLiterals : public AnalysedBodyVisitor {
public:
  std::vector<const StringLiteral *> Found;
  bool visitStmt(Stmt *S) override {
    if (const auto *L = dyn_cast<StringLiteral>(S))
      Found.push_back(L);
    return true;
  }
};

} // namespace

/// A port's `state_dict()` / `load_state_dict(state)` that the target's do the same as: the
/// same types, and no key other than PyTorch's (the target's keys) in the port's body. Empty when
/// it may stay; otherwise why not.
std::string ScalerTypePlanner::stateDictUseProblem(const CXXMethodDecl *M) const {
  if (!M->getIdentifier() || (M->getName() != "state_dict" && M->getName() != "load_state_dict"))
    return "other than through scale/unscale_/step/update/get_scale";
  bool Save = M->getName() == "state_dict";
  if (Save ? (M->getNumParams() != 0 || !isStateDictType(M->getReturnType()))
           : (M->getNumParams() != 1 || !isStateDictType(M->getParamDecl(0)->getType())))
    return "through " + M->getNameAsString() + "(), whose " + (Save ? "result" : "argument") +
           " is not a std::map<std::string, double> as " + Tgt.ScalerClass + "'s is";
  const FunctionDecl *Def = M->getDefinition();
  if (!Def || !Def->getBody())
    return "through " + M->getNameAsString() + "(), whose body is not in this translation unit "
                                                "(which keys does it use?)";
  StringLiterals Lits;
  Lits.walk(Def->getBody());
  static const llvm::StringSet<> Keys = {"scale", "growth_factor", "backoff_factor",
                                         "growth_interval", "_growth_tracker"};
  for (const StringLiteral *L : Lits.Found)
    if (!L->isOrdinary() || !Keys.contains(L->getString()))
      return "through " + M->getNameAsString() + "(), whose state has the key `" +
             C.text(L->getSourceRange()) + "`, not one of PyTorch's GradScaler (scale, growth_factor, "
             "backoff_factor, growth_interval, _growth_tracker) that " + Tgt.ScalerClass + " uses";
  return "";
}

template <class AddFn>
bool ScalerTypePlanner::followUse(const Expr *R, const ValueDecl *H, const CXXRecordDecl *Class, AddFn Add) {
  SourceLocation At = C.stepLoc();
  auto Fail = [&](const std::string &Why) {
    block(At, "the scaler '" + H->getNameAsString() + "' is used at " + C.where(R->getBeginLoc()) +
                  " " + Why + "; changing its type to " + Tgt.ScalerClass + " would break this use");
    return false;
  };
  const Expr *E = R;
  DynTypedNode Parent;
  for (int I = 0; I < 32; ++I) {
    DynTypedNodeList Ps = Ctx.getParents(*E);
    if (Ps.empty())
      return Fail("in a way not followed");
    Parent = Ps[0];
    const Expr *PE = Parent.get<Expr>();
    if (!PE || throughSameObject(PE, Class) != throughSameObject(E, Class))
      break;
    E = PE;
  }
  // A lambda's capture (`[&scaler]`): the lambda's own uses of it are followed one by one.
  if (Parent.get<LambdaExpr>())
    return true;
  // A pointer's truth (`if (s)`, `!s`, `s != nullptr`): any pointer type has it.
  if (const auto *IC = dyn_cast<ImplicitCastExpr>(E); IC && IC->getCastKind() == CK_PointerToBoolean)
    return true;
  if (const auto *BO = Parent.get<BinaryOperator>(); BO && BO->isEqualityOp() &&
      E->getType()->isPointerType()) {
    const Expr *Other = BO->getLHS() == E ? BO->getRHS() : BO->getLHS();
    if (Other->isNullPointerConstant(Ctx, Expr::NPC_ValueDependentIsNotNull) != Expr::NPCK_NotNull)
      return true;
  }
  // `delete s`: deletes whatever class the pointer (retyped with its `new`) points to.
  if (Parent.get<CXXDeleteExpr>() && E->getType()->isPointerType())
    return true;
  // `s.f()` / `s->f()` / `if (s)`: the call's callee is a MemberExpr on the object.
  if (const auto *ME = Parent.get<MemberExpr>(); ME && ME->getBase() == E)
    if (DynTypedNodeList Ps = Ctx.getParents(*ME); !Ps.empty() && Ps[0].get<CXXMemberCallExpr>())
      Parent = Ps[0];
  if (const auto *MC = Parent.get<CXXMemberCallExpr>(); MC && MC->getImplicitObjectArgument() &&
      throughSameObject(MC->getImplicitObjectArgument(), Class) == throughSameObject(E, Class)) {
    // A wrapper's own member (optional / smart pointer): `if (s)`, has_value(), reset(new X(..)).
    const CXXMethodDecl *M = MC->getMethodDecl();
    if (!M)
      return Fail("other than through scale/unscale_/step/update/get_scale");
    if (M->getParent()->getCanonicalDecl() == Class) {
      // The port's checkpointing (`auto s = scaler.state_dict(); ... scaler.load_state_dict(s)`)
      // means the same with the target's scaler when its state is PyTorch's.
      std::string Why = stateDictUseProblem(M);
      return Why.empty() ? true : Fail(Why);
    }
    // `optional.emplace(args...)` constructs the scaler from its constructor's arguments, as
    // make_shared does: they are mapped to the target's options the same way. An argument that is
    // itself a scaler (`emplace(Port(1024.0))`) is a copy, followed by its own spellings.
    if (M->getIdentifier() && M->getName() == "emplace" && MC->getNumArgs() > 0 &&
        llvm::none_of(MC->arguments(), [&](const Expr *A) { return holdsClass(A->getType(), Class); })) {
      FlowMakeCalls.push_back(MC);
      return true;
    }
    for (const Expr *A : MC->arguments())
      collectSpellings(A, Class);
    return true;
  }
  if (const auto *OC = Parent.get<CXXOperatorCallExpr>(); OC && OC->getOperator() == OO_Equal) {
    const ValueDecl *Other = holderOf(OC->getArg(OC->getArg(0) == E ? 1 : 0), Class);
    if (Other)
      Add(Other);
    else if (OC->getArg(0) != E || !collectSpellings(OC->getArg(1), Class))
      return Fail("in an assignment not followed");
    return true;
  }
  if (const auto *BO = Parent.get<BinaryOperator>(); BO && BO->getOpcode() == BO_Assign) {
    const ValueDecl *Other = holderOf(BO->getLHS() == E ? BO->getRHS() : BO->getLHS(), Class);
    if (Other)
      Add(Other);
    else if (BO->getLHS() != E || !collectSpellings(BO->getRHS(), Class))
      return Fail("in an assignment not followed");
    return true;
  }
  if (const auto *VD = Parent.get<VarDecl>()) {
    Add(VD);
    return true;
  }
  if (const auto *CI = Parent.get<CXXCtorInitializer>(); CI && CI->getMember()) {
    Add(CI->getMember());
    return true;
  }
  // A member initialised from it (`scaler_(std::move(scaler))`): the parent map names the
  // constructor, not its initializer.
  if (const auto *Ctor = Parent.get<CXXConstructorDecl>())
    for (const CXXCtorInitializer *CI : Ctor->inits())
      if (CI->getMember() && CI->isWritten() && CI->getInit() &&
          throughSameObject(CI->getInit(), Class) == throughSameObject(E, Class)) {
        Add(CI->getMember());
        return true;
      }
  const FunctionDecl *Callee = nullptr;
  llvm::ArrayRef<const Expr *> Args;
  if (const auto *C = Parent.get<CallExpr>(); C && !isa<CXXOperatorCallExpr>(C)) {
    Callee = C->getDirectCallee();
    Args = llvm::ArrayRef(C->getArgs(), C->getNumArgs());
  } else if (const auto *CE = Parent.get<CXXConstructExpr>()) {
    Callee = CE->getConstructor();
    Args = llvm::ArrayRef(CE->getArgs(), CE->getNumArgs());
  }
  if (!Callee)
    return Fail("other than through scale/unscale_/step/update/get_scale");
  auto It = llvm::find(Args, E);
  unsigned I = It - Args.begin();
  if (It == Args.end() || I >= Callee->getNumParams() ||
      !holdsClass(Callee->getParamDecl(I)->getType(), Class))
    return Fail("as an argument of '" + Callee->getNameAsString() + "' not followed");
  const FunctionDecl *Def = Callee->getDefinition();
  if (!Def || SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())))
    return Fail("as an argument of '" + Callee->getNameAsString() +
                "', whose body is not in this translation unit");
  Add(Def->getParamDecl(I));
  return true;
}

template <class AddFn>
bool ScalerTypePlanner::followCallers(const ParmVarDecl *PV, const CXXRecordDecl *Class, const ScalerUseIndex &Index,
                                AddFn Add) {
  SourceLocation At = C.stepLoc();
  const auto *FD = dyn_cast<FunctionDecl>(PV->getDeclContext());
  std::string Name = "'" + PV->getNameAsString() + "'";
  if (!FD) {
    block(At, "the scaler " + Name + " is a parameter of something other than a function");
    return false;
  }
  std::string Fn = "'" + FD->getQualifiedNameAsString() + "'";
  if (const auto *MD = dyn_cast<CXXMethodDecl>(FD); MD && MD->isVirtual()) {
    block(At, "the scaler " + Name + " is a parameter of the virtual function " + Fn +
                  ", whose overrides would keep their type; change them by hand");
    return false;
  }
  // A function template whose scaler parameter has a type of its own (`template <class Model>
  // void step(Model &m, Port &scaler)`): one source for every instantiation, and the callers of
  // each pass the scaler. A type depending on a template parameter, an explicit specialization
  // (a source of its own) or a member of a class template is left to the user.
  llvm::SmallVector<const FunctionDecl *, 4> Callees{FD};
  // A member function of a class template (`template <class M> struct Trainer { float step(Port
  // &scaler, ...); }`) whose scaler parameter has a type of its own: one source for the member of
  // every specialization of the class, as for a function template. Partial or explicit
  // specializations of the class (sources of their own) are left to the user.
  if (FD->getTemplatedKind() == FunctionDecl::TK_MemberSpecialization) {
    const FunctionDecl *PatternFn = FD->getInstantiatedFromMemberFunction();
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(cast<CXXMethodDecl>(FD)->getParent());
    const ClassTemplateDecl *CTD = Spec ? Spec->getSpecializedTemplate() : nullptr;
    unsigned PI = PV->getFunctionScopeIndex();
    llvm::SmallVector<ClassTemplatePartialSpecializationDecl *, 2> Partials;
    if (CTD)
      const_cast<ClassTemplateDecl *>(CTD)->getPartialSpecializations(Partials);
    bool Plain = PatternFn && CTD && Partials.empty() && PI < PatternFn->getNumParams() &&
                 !PatternFn->getParamDecl(PI)->getType()->isDependentType();
    if (Plain) {
      Callees.clear();
      for (const ClassTemplateSpecializationDecl *CS : CTD->specializations()) {
        if (CS->getSpecializationKind() == TSK_ExplicitSpecialization) {
          block(At, "the scaler " + Name + " is a parameter of " + Fn + ", a member of a class "
                    "template with an explicit specialization at " + C.where(CS->getLocation()) +
                    " that would keep its type; change them by hand");
          return false;
        }
        for (const Decl *D : CS->decls()) {
          const auto *M = dyn_cast<FunctionDecl>(D);
          if (const auto *FTD = dyn_cast<FunctionTemplateDecl>(D))
            M = FTD->getTemplatedDecl();
          if (M && M->getInstantiatedFromMemberFunction() == PatternFn)
            Callees.push_back(M);
        }
      }
    }
    if (!Plain || Callees.empty()) {
      block(At, "the scaler " + Name + " is a parameter of the template " + Fn +
                    (Partials.empty() ? "; change it by hand"
                                      : ", a member of a class template with partial "
                                        "specializations that would keep its type; change them "
                                        "by hand"));
      return false;
    }
  } else if (FD->getTemplatedKind() != FunctionDecl::TK_NonTemplate) {
    const FunctionTemplateDecl *FT = FD->getPrimaryTemplate();
    const FunctionDecl *Pattern = FT ? FT->getTemplatedDecl() : nullptr;
    unsigned PI = PV->getFunctionScopeIndex();
    bool Plain = FD->getTemplatedKind() == FunctionDecl::TK_FunctionTemplateSpecialization &&
                 Pattern && !isa<CXXMethodDecl>(Pattern) && PI < Pattern->getNumParams() &&
                 !Pattern->getParamDecl(PI)->getType()->isDependentType();
    std::string Why = "; change it by hand";
    if (Plain) {
      Callees.clear();
      for (const FunctionDecl *Sp : FT->specializations()) {
        if (Sp->getTemplateSpecializationKind() == TSK_ExplicitSpecialization) {
          Plain = false;
          Why = ", which has an explicit specialization at " + C.where(Sp->getLocation()) +
                " that would keep its type; change them by hand";
        }
        Callees.push_back(Sp);
      }
    }
    if (!Plain) {
      block(At, "the scaler " + Name + " is a parameter of the template " + Fn + Why);
      return false;
    }
  }
  if (auto It = Index.NamedOtherwise.find(FD->getCanonicalDecl()); It != Index.NamedOtherwise.end()) {
    block(At, "the scaler " + Name + " is a parameter of " + Fn + ", which is named at " +
                  C.where(It->second->getBeginLoc()) + " other than in a call; its callers cannot "
                  "all be followed");
    return false;
  }
  if (FD->isExternallyVisible())
    for (const FunctionDecl *R : FD->redecls()) {
      SourceLocation L = SM.getExpansionLoc(R->getLocation());
      if (SM.getFileID(L) != SM.getMainFileID()) {
        block(At, "the scaler " + Name + " is a parameter of " + Fn + ", declared at " + C.where(L) +
                      ": callers in other translation units would still pass a '" +
                      Class->getNameAsString() + "'; migrate it by hand");
        return false;
      }
    }
  unsigned I = PV->getFunctionScopeIndex();
  for (const FunctionDecl *Callee : Callees) {
    if (auto It = Index.Calls.find(Callee->getCanonicalDecl()); It != Index.Calls.end())
      for (const Expr *Call : It->second) {
        const Expr *Arg = nullptr;
        if (const auto *C = dyn_cast<CallExpr>(Call); C && !isa<CXXOperatorCallExpr>(C))
          Arg = I < C->getNumArgs() ? C->getArg(I) : nullptr;
        else if (const auto *CE = dyn_cast<CXXConstructExpr>(Call))
          Arg = I < CE->getNumArgs() ? CE->getArg(I) : nullptr;
        if (!Arg || isa<CXXDefaultArgExpr>(Arg)) {
          block(At, "the call of " + Fn + " at " + C.where(Call->getBeginLoc()) +
                        " does not pass the scaler " + Name + " in a way that can be followed");
          return false;
        }
        if (const ValueDecl *H = holderOf(Arg, Class)) {
          Add(H);
          continue;
        }
        if (!collectSpellings(Arg, Class)) {
          block(At, "the call of " + Fn + " at " + C.where(Call->getBeginLoc()) + " passes a scaler " +
                        "that is neither a variable nor a construction of '" + Class->getNameAsString() + "'");
          return false;
        }
      }
  }
  return true;
}

/// The template parameter a declaration's type names for the scaler (`Scaler scaler_;`,
/// `std::unique_ptr<Scaler>` in a class template), seen in an instantiation; null otherwise.
static const TemplateTypeParmDecl *scalerTemplateParameter(QualType QT) {
  for (int Depth = 0; Depth < 4 && !QT.isNull(); ++Depth) {
    QT = QT.getNonReferenceType();
    if (const auto *Subst = QT->getAs<SubstTemplateTypeParmType>())
      return Subst->getReplacedParameter();
    if (QT->isPointerType()) {
      QT = QT->getPointeeType();
      continue;
    }
    const auto *TST = QT->getAs<TemplateSpecializationType>();
    if (!TST || TST->template_arguments().empty() ||
        TST->template_arguments()[0].getKind() != TemplateArgument::Type)
      return nullptr;
    QT = TST->template_arguments()[0].getAsType();
  }
  return nullptr;
}

template <class AddFn>
bool ScalerTypePlanner::followHolder(const ValueDecl *H, const CXXRecordDecl *Class, const ScalerUseIndex &Index,
                               AddFn Add) {
  SourceLocation At = C.stepLoc();
  std::string Name = "'" + H->getNameAsString() + "'";
  if (!isa<VarDecl, FieldDecl>(H)) {
    block(At, "the scaler " + Name + " is not a variable or a data member");
    return false;
  }
  size_t Spelled = FlowTypeRanges.size() + FlowConstructs.size() + FlowMakeCalls.size();
  for (const DeclaratorDecl *DD : declarationsOf(H)) {
    std::string Why = C.whyNotEditable(DD->getLocation());
    if (!Why.empty()) {
      block(At, "the declaration of the scaler " + Name + " at " + C.where(DD->getLocation()) +
                    " must change to " + Tgt.ScalerClass + ", but " + Why);
      return false;
    }
    if (TypeSourceInfo *TSI = DD->getTypeSourceInfo()) {
      TypeLocFinder TF(Class);
      TF.walk(TSI->getTypeLoc());
      // `auto s = std::make_shared<Port>(...)`: the deduced type names make_shared's parameter;
      // the spelling to change is the initializer's, collected below.
      const TemplateTypeParmDecl *Param =
          TF.Ranges.empty() && !DD->getType()->getContainedDeducedType()
              ? scalerTemplateParameter(DD->getType())
              : nullptr;
      if (Param) {
        block(At, "the scaler " + Name + " at " + C.where(DD->getLocation()) +
                      " is declared with the template parameter '" + Param->getNameAsString() +
                      "' (" + Class->getQualifiedNameAsString() + " here); it must become " +
                      Tgt.ScalerClass + " where the template gets its argument: change that by "
                      "hand or migrate this step by hand");
        return false;
      }
      llvm::append_range(FlowTypeRanges, TF.Ranges);
    }
    if (const auto *VD = dyn_cast<VarDecl>(DD); VD && !isa<ParmVarDecl>(VD) && VD->getInit()) {
      collectSpellings(VD->getInit(), Class);
      if (const ValueDecl *From = holderOf(VD->getInit(), Class))
        Add(From);
    }
  }
  if (const auto *FDl = dyn_cast<FieldDecl>(H)) {
    if (FDl->hasInClassInitializer())
      collectSpellings(FDl->getInClassInitializer(), Class);
    for (const CXXConstructorDecl *Ctor : cast<CXXRecordDecl>(FDl->getParent())->ctors()) {
      const FunctionDecl *Def = nullptr;
      if (!Ctor->isDefined(Def)) {
        if (Ctor->isUserProvided()) {
          block(At, "the constructor at " + C.where(Ctor->getLocation()) + " may initialize the scaler " +
                        Name + ", but its body is not in this translation unit");
          return false;
        }
        continue;
      }
      for (const CXXCtorInitializer *Init : cast<CXXConstructorDecl>(Def)->inits())
        if (Init->getMember() == FDl && Init->isWritten()) {
          collectSpellings(Init->getInit(), Class);
          if (const ValueDecl *From = holderOf(Init->getInit(), Class))
            Add(From);
        }
    }
  }
  if (FlowTypeRanges.size() + FlowConstructs.size() + FlowMakeCalls.size() == Spelled) {
    block(At, "the type of the scaler " + Name + " is not spelled in its declaration at " +
                  C.where(H->getLocation()) + " (auto, a template parameter); change it by hand");
    return false;
  }
  if (auto It = Index.Refs.find(H->getCanonicalDecl()); It != Index.Refs.end())
    for (const Expr *R : It->second)
      if (!isScalerCallOn(R, H) && !followUse(R, H, Class, Add))
        return false;
  if (const auto *PV = dyn_cast<ParmVarDecl>(H))
    return followCallers(PV, Class, Index, Add);
  return true;
}

void ScalerTypePlanner::checkScalerFlow(const CXXRecordDecl *Class) {
  ScalerUseIndex Index(Class, SM);
  Index.walk(Ctx.getTranslationUnitDecl());
  std::vector<const ValueDecl *> Work{T.Scaler.Decl};
  llvm::SmallPtrSet<const Decl *, 8> Seen{T.Scaler.Decl->getCanonicalDecl()};
  auto Add = [&](const ValueDecl *H) {
    if (Seen.insert(H->getCanonicalDecl()).second)
      Work.push_back(H);
  };
  bool Ok = true;
  for (size_t I = 0; I < Work.size() && Ok; ++I)
    Ok = followHolder(Work[I], Class, Index, Add);
  Out.Holders = Work;
  if (!Ok || !checkFlowSpellings(Class))
    return;
  for (FileID F : OtherFilesEdited)
    includeIn(F);
}

bool ScalerTypePlanner::checkFlowSpellings(const CXXRecordDecl *Class) {
  for (SourceRange R : FlowTypeRanges)
    if (!planEditAnywhere(R, Tgt.ScalerClass)) {
      block(R.getBegin(), "the scaler's type is spelled inside a macro at " + C.where(R.getBegin()));
      return false;
    }
  auto EditConstruction = [&](const Expr *Construction) {
    std::string Opts;
    SourceRange Written;
    if (!constructionOptions(Construction, Class, Opts, Written))
      return false;
    if (Written.isValid() && !planEditAnywhere(Written, Opts)) {
      block(Construction->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
      return false;
    }
    return true;
  };
  for (const CXXConstructExpr *CE : FlowConstructs)
    if (!EditConstruction(CE))
      return false;
  for (const CallExpr *MC : FlowMakeCalls)
    if (!EditConstruction(MC))
      return false;
  return true;
}

} // namespace ampmigrate
