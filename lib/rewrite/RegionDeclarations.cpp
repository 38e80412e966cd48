// Carries the declarations of a forward region that the code after the step still names out of
// the function handed to value_and_grad (RegionDeclarations.h).
#include "RegionDeclarations.h"

#include "ampmigrate/StepFinder.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/GenericLambdas.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/TypeLoc.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;

namespace ampmigrate {
namespace {

/// The references to one declaration (a variable, a structured binding) in a body.
class References : public AnalysedBodyVisitor {
public:
  explicit References(const ValueDecl *Target) : Target(Target) {}
  const ValueDecl *Target;
  std::vector<const Expr *> Found;
  bool visitStmt(Stmt *S) override {
    if (const auto *E = dyn_cast<DeclRefExpr>(S); E && E->getDecl() == Target)
      Found.push_back(E);
    return true;
  }
};

/// Where a type declared in the region (a local class, enum or alias) is named in a body.
class TypeUses : public AnalysedBodyVisitor {
public:
  explicit TypeUses(const TypeDecl *Target) : Target(Target) {}
  const TypeDecl *Target;
  std::vector<SourceLocation> Found;
  bool visitTypeLoc(TypeLoc TL) override {
    if (auto T = TL.getAs<TypedefTypeLoc>())
      return note(T.getTypedefNameDecl(), TL);
    if (auto R = TL.getAs<RecordTypeLoc>())
      return note(R.getDecl(), TL);
    if (auto E = TL.getAs<EnumTypeLoc>())
      return note(E.getDecl(), TL);
    return true;
  }
  bool note(const Decl *D, TypeLoc TL) {
    if (D == Target)
      Found.push_back(TL.getBeginLoc());
    return true;
  }
};

/// The variables an expression names.
class Names : public AnalysedBodyVisitor {
public:
  llvm::SmallPtrSet<const ValueDecl *, 8> Found;
  bool visitStmt(Stmt *S) override {
    if (const auto *E = dyn_cast<DeclRefExpr>(S))
      Found.insert(E->getDecl());
    return true;
  }
};

class Planner {
public:
  Planner(ASTContext &Ctx, const RuleSet &Rules, llvm::ArrayRef<const Stmt *> Region,
          const Stmt *Body, llvm::function_ref<bool(const Expr *)> UsedOutside,
          RegionDeclarations &Out)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), LO(Ctx.getLangOpts()), Rules(Rules),
        Region(Region), Body(Body), UsedOutside(UsedOutside), Out(Out) {
    RegionBegin = offset(Region.front()->getBeginLoc());
    RegionEnd = offset(Region.back()->getEndLoc());
    for (const Stmt *St : Region)
      if (const auto *DS = dyn_cast<DeclStmt>(St))
        for (const Decl *D : DS->decls())
          if (const auto *VD = dyn_cast<ValueDecl>(D))
            Declared.insert(VD);
  }

  std::optional<RegionDeclarationsBlocked> run() {
    for (const Stmt *St : Region) {
      const auto *DS = dyn_cast<DeclStmt>(St);
      if (!DS)
        continue;
      for (const Decl *D : DS->decls())
        if (auto Why = carry(DS, D))
          return Why;
    }
    return std::nullopt;
  }

private:
  ASTContext &Ctx;
  const SourceManager &SM;
  const LangOptions &LO;
  const RuleSet &Rules;
  llvm::ArrayRef<const Stmt *> Region;
  const Stmt *Body;
  llvm::function_ref<bool(const Expr *)> UsedOutside;
  RegionDeclarations &Out;
  unsigned RegionBegin = 0, RegionEnd = 0;
  llvm::SmallPtrSet<const ValueDecl *, 8> Declared;

  using Result = std::optional<RegionDeclarationsBlocked>;
  static Result blocked(SourceLocation L, std::string Why) {
    return RegionDeclarationsBlocked{L, std::move(Why)};
  }

  unsigned offset(SourceLocation L) const { return SM.getFileOffset(SM.getExpansionLoc(L)); }
  StringRef buffer() const { return SM.getBufferData(SM.getFileID(SM.getExpansionLoc(Region.front()->getBeginLoc()))); }

  std::string text(SourceRange R) const { return StepFinder::textOf(Ctx, R); }

  bool usedOutside(const ValueDecl *D) const {
    References R(D);
    R.walk(Body);
    return llvm::any_of(R.Found, [&](const Expr *E) { return UsedOutside(E); });
  }

  Result carry(const DeclStmt *DS, const Decl *D) {
    if (const auto *TD = dyn_cast<TypeDecl>(D))
      return carryType(TD);
    const auto *VD = dyn_cast<VarDecl>(D);
    if (!VD)
      return std::nullopt;
    if (const auto *DD = dyn_cast<DecompositionDecl>(VD))
      return carryBindings(DS, DD);
    if (!usedOutside(VD))
      return std::nullopt;
    std::string Name = "'" + VD->getNameAsString() + "'";
    if (DS->getBeginLoc().isMacroID() || VD->getLocation().isMacroID())
      return blocked(VD->getLocation(), Name + " is declared in the forward region by a macro and "
                                               "used after it; hoist its declaration by hand");
    if (!DS->isSingleDecl())
      return blocked(VD->getLocation(),
                     Name + " is declared with other variables in one statement in the forward "
                            "region and used after it; declare it on its own");
    QualType Ty = VD->getType();
    if (Ty->isReferenceType())
      return blocked(VD->getLocation(), Name + " is a reference declared in the forward region "
                                               "and used after it; hoist its declaration by hand");
    if (VD->isStaticLocal() || VD->getTLSKind() != VarDecl::TLS_None || VD->isConstexpr() ||
        (Ty.isConstQualified() && VD->isUsableInConstantExpressions(Ctx)))
      return moveOut(DS, VD);
    if (defaultInitialised(VD))
      return moveOut(DS, VD);
    std::string Why;
    std::optional<std::string> TypeText = declarableType(VD, Ty, Why);
    if (!TypeText)
      return blocked(VD->getLocation(), Name + " is declared in the forward region and used "
                                               "after it, and " + Why);
    if (VD->getInitStyle() == VarDecl::ParenListInit)
      return blocked(VD->getLocation(), Name + " is initialised with a parenthesised aggregate "
                                               "list and used after the forward region; hoist "
                                               "it by hand");
    // `T x = init;` -> `x = init;`; `T x(args);` / `T x{args};` -> `x = T(args);` / `x = T{args};`.
    unsigned DB = offset(DS->getBeginLoc()), NameOff = offset(VD->getLocation());
    Out.Inner.push_back({DB, NameOff - DB, commentsIn(DB, NameOff)});
    if (VD->getInitStyle() != VarDecl::CInit) {
      unsigned NameEnd = NameOff + VD->getName().size();
      Out.Inner.push_back({NameEnd, 0, " = " + *TypeText});
    }
    Out.Hoisted.push_back(*TypeText + " " + VD->getNameAsString() + ";");
    return std::nullopt;
  }

  /// `T x;` with nothing to compute: the declaration itself moves before the function.
  bool defaultInitialised(const VarDecl *VD) const {
    if (!VD->hasInit())
      return true;
    if (VD->getInitStyle() == VarDecl::ListInit)
      return false; // `T x{};` value-initialises
    const auto *CE = dyn_cast<CXXConstructExpr>(VD->getInit()->IgnoreImplicit());
    return CE && CE->getNumArgs() == 0 && !isa<CXXTemporaryObjectExpr>(CE) &&
           CE->getParenOrBraceRange().isInvalid();
  }

  /// A declaration whose value does not come from the forward pass (a static or constexpr local,
  /// a constant, a default-constructed variable) moves before the function as written, so that it
  /// is still initialised once (statics) and never re-assigned.
  Result moveOut(const DeclStmt *DS, const VarDecl *VD) {
    std::string Name = "'" + VD->getNameAsString() + "'";
    if (VD->hasInit() && !defaultInitialised(VD)) {
      bool Constant = VD->isConstexpr() || VD->isUsableInConstantExpressions(Ctx) ||
                      VD->getInit()->isConstantInitializer(Ctx, VD->getType()->isReferenceType());
      Names N;
      N.walk(VD->getInit());
      bool ReadsRegion = llvm::any_of(N.Found, [&](const ValueDecl *D) { return Declared.count(D); });
      if (!Constant || ReadsRegion)
        return blocked(VD->getLocation(),
                       Name + " is a static or thread_local variable initialised in the forward "
                              "region and used after it; moving it out of the function given to "
                              "amp::value_and_grad would change when its initialiser runs");
    }
    unsigned B = offset(DS->getBeginLoc());
    unsigned E = offset(DS->getEndLoc()) + 1; // the DeclStmt ends at its `;`
    StringRef Buf = buffer();
    Out.Hoisted.push_back(Buf.slice(B, E).str());
    // The whole line when the declaration is alone on it.
    unsigned LS = B, LE = E;
    while (LS > 0 && (Buf[LS - 1] == ' ' || Buf[LS - 1] == '\t'))
      --LS;
    while (LE < Buf.size() && (Buf[LE] == ' ' || Buf[LE] == '\t' || Buf[LE] == '\r'))
      ++LE;
    if ((LS == 0 || Buf[LS - 1] == '\n') && (LE == Buf.size() || Buf[LE] == '\n'))
      Out.Inner.push_back({LS, LE - LS + (LE < Buf.size() ? 1 : 0), ""});
    else
      Out.Inner.push_back({B, E - B, ""});
    return std::nullopt;
  }

  /// `auto [a, b] = f();` of a std::tuple or std::pair by value: `A a; B b;` before the function
  /// and `std::tie(a, b) = f();` in it.
  Result carryBindings(const DeclStmt *DS, const DecompositionDecl *DD) {
    bool Used = llvm::any_of(DD->bindings(), [&](const BindingDecl *BD) { return usedOutside(BD); });
    if (!Used)
      return std::nullopt;
    std::string Names;
    for (const BindingDecl *BD : DD->bindings())
      Names += (Names.empty() ? "" : ", ") + BD->getNameAsString();
    std::string What = "the structured binding [" + Names + "]";
    SourceLocation L = DD->getLocation();
    auto Refuse = [&](StringRef Why) {
      return blocked(L, What + " is declared in the forward region and used after it, and " +
                            Why.str() + "; declare its names before the scope and assign them "
                                        "with std::tie by hand");
    };
    if (DS->getBeginLoc().isMacroID() || L.isMacroID())
      return Refuse("it comes from a macro");
    if (!DS->isSingleDecl())
      return Refuse("it shares its statement with other declarations");
    QualType Ty = DD->getType();
    if (Ty->isReferenceType())
      return Refuse("it binds by reference");
    const CXXRecordDecl *RD = Ty->getAsCXXRecordDecl();
    std::string Class = RD ? qualifiedName(RD) : "";
    if (Class != "std::tuple" && Class != "std::pair")
      return Refuse("it decomposes " + (Class.empty() ? std::string("a non-class value") : Class) +
                    ", not a std::tuple or std::pair");
    std::vector<std::string> Decls;
    for (const BindingDecl *BD : DD->bindings()) {
      QualType BT = BD->getType();
      if (BT.isNull() || BT->isReferenceType())
        return Refuse("'" + BD->getNameAsString() + "' is a reference");
      std::string Why;
      std::optional<std::string> TypeText = declarableType(nullptr, BT, Why);
      if (!TypeText)
        return Refuse(Why);
      Decls.push_back(*TypeText + " " + BD->getNameAsString() + ";");
    }
    // Everything from the declaration's start to its `]` becomes `std::tie(a, b)`.
    const BindingDecl *Last = DD->bindings().back();
    Token Tok;
    SourceLocation After = Lexer::getLocForEndOfToken(Last->getLocation(), 0, SM, LO);
    if (Lexer::getRawToken(After, Tok, SM, LO, /*IgnoreWhiteSpace=*/true) ||
        !Tok.is(tok::r_square))
      return Refuse("its brackets could not be found");
    unsigned DB = offset(DS->getBeginLoc()), Close = offset(Tok.getLocation()) + 1;
    Out.Inner.push_back({DB, Close - DB, "std::tie(" + Names + ")"});
    for (std::string &D : Decls)
      Out.Hoisted.push_back(std::move(D));
    return std::nullopt;
  }

  /// A local class, enum or alias of the region named after it would not be visible there.
  Result carryType(const TypeDecl *TD) {
    TypeUses U(TD);
    U.walk(Body);
    for (SourceLocation L : U.Found) {
      unsigned O = offset(L);
      if (O < RegionBegin || O > RegionEnd)
        return blocked(TD->getLocation(), "the type '" + TD->getNameAsString() +
                                              "' is declared in the forward region and used "
                                              "after it; move its declaration before the scope");
    }
    return std::nullopt;
  }

  /// How to write `Ty` in a declaration before the region (the declaration `VD` as written when it
  /// names its type itself), or nothing with the reason in `Why`.
  std::optional<std::string> declarableType(const VarDecl *VD, QualType Ty, std::string &Why) {
    Ty = Ty.getUnqualifiedType();
    if (Ty->isDependentType() || Ty->isUndeducedType()) {
      Why = "its type depends on a template parameter";
      return std::nullopt;
    }
    if (Ty->isArrayType()) {
      Why = "it is an array";
      return std::nullopt;
    }
    if (Ty->isFunctionPointerType() || Ty->isMemberPointerType() || Ty->isFunctionType()) {
      Why = "it is a pointer to a function or member";
      return std::nullopt;
    }
    if (const CXXRecordDecl *RD = Ty->getAsCXXRecordDecl()) {
      if (RD->isLambda()) {
        Why = "it holds a lambda, whose type has no name";
        return std::nullopt;
      }
      if (RD->isLocalClass()) {
        unsigned O = offset(RD->getLocation());
        if (O >= RegionBegin && O <= RegionEnd) {
          Why = "its type is declared in the forward region";
          return std::nullopt;
        }
      }
      if (RD->hasDefinition() && !RD->hasDefaultConstructor()) {
        Why = "its type " + qualifiedName(RD) + " has no default constructor";
        return std::nullopt;
      }
    }
    if (isTensorType(Ty, Rules))
      return std::string("torch::Tensor");
    // The type as the declaration writes it (valid where the region starts), unless it is
    // deduced or the text would lose qualifiers inside it (`const T *`).
    if (VD && VD->getTypeSourceInfo() && !Ty->getContainedAutoType() && !Ty->isPointerType()) {
      TypeLoc TL = VD->getTypeSourceInfo()->getTypeLoc().getUnqualifiedLoc();
      SourceRange R = TL.getSourceRange();
      if (R.isValid() && !R.getBegin().isMacroID() && !R.getEnd().isMacroID()) {
        std::string Written = text(R);
        if (!Written.empty())
          return Written;
      }
    }
    PrintingPolicy PP(LO);
    PP.SuppressTagKeyword = true;
    PP.FullyQualifiedName = true;
    PP.SuppressUnwrittenScope = true;
    std::string Printed = Ty.getAsString(PP);
    if (StringRef(Printed).contains("(anonymous") || StringRef(Printed).contains("(unnamed") ||
        StringRef(Printed).contains("(lambda")) {
      Why = "its type " + Printed + " cannot be named in the source";
      return std::nullopt;
    }
    return Printed;
  }

  /// The comments between two offsets, each followed by a space (what survives of removed type
  /// text such as `int /* keep */ n`).
  std::string commentsIn(unsigned B, unsigned E) const {
    StringRef Buf = buffer();
    FileID F = SM.getFileID(SM.getExpansionLoc(Region.front()->getBeginLoc()));
    Lexer Lex(SM.getLocForStartOfFile(F), LO, Buf.data(), Buf.data() + B, Buf.data() + Buf.size());
    Lex.SetCommentRetentionState(true);
    std::string Kept;
    for (Token Tok;;) {
      Lex.LexFromRawLexer(Tok);
      if (Tok.is(tok::eof) || SM.getFileOffset(Tok.getLocation()) >= E)
        break;
      if (!Tok.is(tok::comment))
        continue;
      StringRef C = Buf.substr(SM.getFileOffset(Tok.getLocation()), Tok.getLength());
      // A line comment ends its line, or it would swallow the code that follows.
      Kept += C.str() + (C.starts_with("//") ? "\n" : " ");
    }
    return Kept;
  }
};

} // namespace

std::optional<RegionDeclarationsBlocked>
planRegionDeclarations(ASTContext &Ctx, const RuleSet &Rules, llvm::ArrayRef<const Stmt *> Region,
                       const Stmt *Body, llvm::function_ref<bool(const Expr *)> UsedOutside,
                       RegionDeclarations &Out) {
  if (Region.empty())
    return std::nullopt;
  return Planner(Ctx, Rules, Region, Body, UsedOutside, Out).run();
}

} // namespace ampmigrate
