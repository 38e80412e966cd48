// The result cache: keys, dependency logs, entries on disk (atomic writes), LRU trimming.
#include "ampmigrate/ResultCache.h"

#include "clang/Basic/Version.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>

namespace json = llvm::json;
using llvm::StringRef;

namespace ampmigrate {
namespace {

/// Bumped whenever the entry format or what a key covers changes.
constexpr int FormatVersion = 6;

std::string hashBytes(StringRef Bytes) {
  llvm::BLAKE3 H;
  H.update(Bytes);
  return llvm::toHex(H.final(), /*LowerCase=*/true);
}

/// Strings hashed one after another stay distinct however their bytes are split.
void feed(llvm::BLAKE3 &H, StringRef S) {
  uint64_t N = S.size();
  H.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(&N), sizeof(N)));
  H.update(S);
}

/// The running executable: a rebuilt tool (new checks, a fixed bug) never reads its
/// predecessor's results, whatever its version string says.
const std::string &executableHash() {
  static const std::string Hash = [] {
    std::string Exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
    auto Buf = llvm::MemoryBuffer::getFile(Exe, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    // Unreadable: a key no other run shares, so the cache never answers.
    if (!Buf)
      return "unreadable:" + std::to_string(llvm::sys::Process::getProcessId()) + ":" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    return hashBytes((*Buf)->getBuffer());
  }();
  return Hash;
}

class RecordingFile : public llvm::vfs::File {
public:
  RecordingFile(std::unique_ptr<llvm::vfs::File> Inner, std::string Path, DependencyLog &Log)
      : Inner(std::move(Inner)), Path(std::move(Path)), Log(Log) {}
  llvm::ErrorOr<llvm::vfs::Status> status() override { return Inner->status(); }
  llvm::ErrorOr<std::string> getName() override { return Inner->getName(); }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> getBuffer(const llvm::Twine &Name, int64_t FileSize,
                                                               bool RequiresNullTerminator,
                                                               bool IsVolatile) override {
    auto Buf = Inner->getBuffer(Name, FileSize, RequiresNullTerminator, IsVolatile);
    if (Buf)
      Log.read(Path, (*Buf)->getBuffer()); // the bytes the parser sees, not a later re-read
    return Buf;
  }
  std::error_code close() override { return Inner->close(); }

private:
  std::unique_ptr<llvm::vfs::File> Inner;
  std::string Path;
  DependencyLog &Log;
};

class RecordingFileSystem : public llvm::vfs::ProxyFileSystem {
public:
  RecordingFileSystem(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS, DependencyLog &Log)
      : ProxyFileSystem(std::move(FS)), Log(Log) {}

  llvm::ErrorOr<llvm::vfs::Status> status(const llvm::Twine &Path) override {
    auto S = ProxyFileSystem::status(Path);
    Log.probed(absolute(Path), static_cast<bool>(S));
    return S;
  }
  bool exists(const llvm::Twine &Path) override { return static_cast<bool>(status(Path)); }
  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>> openFileForRead(const llvm::Twine &Path) override {
    std::string Abs = absolute(Path);
    auto F = ProxyFileSystem::openFileForRead(Path);
    if (!F) {
      Log.probed(Abs, false);
      return F;
    }
    Log.probed(Abs, true);
    return std::unique_ptr<llvm::vfs::File>(std::make_unique<RecordingFile>(std::move(*F), Abs, Log));
  }

private:
  std::string absolute(const llvm::Twine &Path) const {
    llvm::SmallString<256> P;
    Path.toVector(P);
    makeAbsolute(P);
    return std::string(P);
  }
  DependencyLog &Log;
};

json::Value posToJson(const SourcePos &P) {
  return json::Array{P.File, static_cast<int64_t>(P.Line), static_cast<int64_t>(P.Column),
                     static_cast<int64_t>(P.Offset)};
}

bool posFromJson(const json::Value *V, SourcePos &P) {
  const json::Array *A = V ? V->getAsArray() : nullptr;
  if (!A || A->size() != 4)
    return false;
  auto File = (*A)[0].getAsString();
  auto Line = (*A)[1].getAsInteger(), Col = (*A)[2].getAsInteger(), Off = (*A)[3].getAsInteger();
  if (!File || !Line || !Col || !Off)
    return false;
  P.File = File->str();
  P.Line = static_cast<unsigned>(*Line);
  P.Column = static_cast<unsigned>(*Col);
  P.Offset = static_cast<unsigned>(*Off);
  return true;
}

} // namespace

void DependencyLog::probed(const std::string &Path, bool Exists) {
  std::lock_guard<std::mutex> L(M);
  Entry &E = Entries[Path];
  if (E.K == Kind::Content)
    return;
  E.K = Exists ? Kind::Exists : Kind::Missing;
}

void DependencyLog::read(const std::string &Path, StringRef Bytes) {
  std::string H = hashBytes(Bytes);
  std::lock_guard<std::mutex> L(M);
  Entry &E = Entries[Path];
  if (E.K == Kind::Content && E.Hash != H)
    E.Hash = "changed-during-parse"; // read twice, two contents: never matches again
  else
    E.Hash = std::move(H);
  E.K = Kind::Content;
}

std::map<std::string, DependencyLog::Entry> DependencyLog::take() {
  std::lock_guard<std::mutex> L(M);
  return std::move(Entries);
}

void DependencyLog::add(const std::map<std::string, Entry> &From) {
  std::lock_guard<std::mutex> L(M);
  for (const auto &[Path, F] : From) {
    Entry &E = Entries[Path];
    if (E.K != Kind::Content)
      E = F;
    else if (F.K == Kind::Content && F.Hash != E.Hash)
      E.Hash = "changed-during-parse";
  }
}

llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> makeRecordingFileSystem(DependencyLog &Log) {
  // A physical file system of its own: its working directory is per parse, not the process's.
  std::unique_ptr<llvm::vfs::FileSystem> Real = llvm::vfs::createPhysicalFileSystem();
  return llvm::makeIntrusiveRefCnt<RecordingFileSystem>(
      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(Real.release()), Log);
}

std::string ResultCache::commandKey(const RuleSet &Rules, StringRef Configuration,
                                    const std::vector<clang::tooling::CompileCommand> &Cmds,
                                    const std::map<std::string, std::string> &Overlays) const {
  llvm::BLAKE3 H;
  feed(H, "amp-migrate-cache");
  feed(H, std::to_string(FormatVersion));
  feed(H, AMP_MIGRATE_VERSION);
  feed(H, executableHash());
  feed(H, LLVM_VERSION_STRING);
  feed(H, clang::getClangFullVersion());
  // The rule files by content: an edited rule file is a new key even under the same name.
  for (const std::string &Source : Rules.Sources) {
    feed(H, Source);
    auto Buf = llvm::MemoryBuffer::getFile(Source, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    feed(H, Buf ? hashBytes((*Buf)->getBuffer()) : "unreadable");
  }
  feed(H, Configuration);
  // The driver reads include paths from these as well as from the command line.
  for (const char *Var : {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH", "SDKROOT"}) {
    std::optional<std::string> Value = llvm::sys::Process::GetEnv(Var);
    feed(H, Var);
    feed(H, Value ? "=" + *Value : "unset");
  }
  for (const clang::tooling::CompileCommand &C : Cmds) {
    feed(H, "command");
    feed(H, C.Directory);
    feed(H, C.Filename);
    for (const std::string &A : C.CommandLine)
      feed(H, A);
  }
  for (const auto &[Path, Text] : Overlays) {
    feed(H, "overlay");
    feed(H, Path);
    feed(H, hashBytes(Text));
  }
  return llvm::toHex(H.final(), /*LowerCase=*/true);
}

std::string ResultCache::entryPath(StringRef Key) const {
  llvm::SmallString<256> P(Dir);
  llvm::sys::path::append(P, Key.take_front(2), (Key + ".json").str());
  return std::string(P);
}

std::optional<std::string> ResultCache::currentHash(const std::string &Path) {
  {
    std::lock_guard<std::mutex> L(M);
    auto It = Hashes.find(Path);
    if (It != Hashes.end())
      return It->second;
  }
  std::optional<std::string> H;
  if (auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false))
    H = hashBytes((*Buf)->getBuffer());
  std::lock_guard<std::mutex> L(M);
  Hashes.emplace(Path, H);
  return H;
}

std::optional<CachedTU> ResultCache::lookup(StringRef Key) {
  std::string Path = entryPath(Key);
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return std::nullopt;
  llvm::Expected<json::Value> V = json::parse((*Buf)->getBuffer());
  if (!V) {
    llvm::consumeError(V.takeError()); // a damaged entry is a miss; the next store replaces it
    return std::nullopt;
  }
  const json::Object *O = V->getAsObject();
  if (!O || O->getInteger("format") != FormatVersion || O->getString("key") != Key)
    return std::nullopt;
  const json::Array *Deps = O->getArray("deps");
  const json::Value *Findings = O->get("findings"), *Fixes = O->get("fixes");
  const json::Object *Digests = O->getObject("digests");
  std::optional<bool> BodiesUnchecked = O->getBoolean("bodies-unchecked");
  std::optional<bool> FixesDeferred = O->getBoolean("fixes-deferred");
  const json::Value *Summaries = O->get("summaries");
  const json::Object *Unknown = O->getObject("unknown-callees");
  if (!Deps || !Findings || !Fixes || !Digests || !BodiesUnchecked || !FixesDeferred || !Summaries || !Unknown)
    return std::nullopt;
  for (const json::Value &D : *Deps) {
    const json::Array *A = D.getAsArray();
    if (!A || A->size() < 2)
      return std::nullopt;
    auto File = (*A)[0].getAsString();
    auto Kind = (*A)[1].getAsString();
    if (!File || !Kind)
      return std::nullopt;
    if (*Kind == "missing") {
      if (llvm::sys::fs::exists(*File))
        return std::nullopt;
    } else if (*Kind == "exists") {
      if (!llvm::sys::fs::exists(*File))
        return std::nullopt;
    } else if (*Kind == "content") {
      auto Stored = A->size() == 3 ? (*A)[2].getAsString() : std::nullopt;
      std::optional<std::string> Now = currentHash(File->str());
      if (!Stored || !Now || *Now != *Stored)
        return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  std::optional<std::vector<Finding>> StoredFindings = findingsFromJson(*Findings);
  std::optional<std::vector<StepFix>> StoredFixes = stepFixesFromJson(*Fixes);
  std::optional<SummaryIndex> StoredSummaries = SummaryIndex::fromJSON(*Summaries);
  if (!StoredFindings || !StoredFixes || !StoredSummaries)
    return std::nullopt;
  CachedTU Result{std::move(*StoredFindings), std::move(*StoredFixes), {}, *BodiesUnchecked, *FixesDeferred,
                  std::move(*StoredSummaries), {}};
  for (const auto &[USR, V] : *Unknown) {
    const json::Array *A = V.getAsArray();
    if (!A || A->size() != 3 || !(*A)[0].getAsString() || !(*A)[1].getAsString() || !(*A)[2].getAsBoolean())
      return std::nullopt;
    Result.UnknownCallees[USR.str()] = {(*A)[0].getAsString()->str(), (*A)[1].getAsString()->str(),
                                        *(*A)[2].getAsBoolean()};
  }
  for (const auto &[File, Hex] : *Digests) {
    std::optional<StringRef> H = Hex.getAsString();
    std::string Digest;
    if (!H || !llvm::tryGetFromHex(*H, Digest))
      return std::nullopt;
    Result.Digests[File.str()] = std::move(Digest);
  }
  // Recently used: trimming removes the least recently used entries first.
  int FD;
  if (!llvm::sys::fs::openFileForReadWrite(Path, FD, llvm::sys::fs::CD_OpenExisting, llvm::sys::fs::OF_None)) {
    (void)llvm::sys::fs::setLastAccessAndModificationTime(FD, std::chrono::system_clock::now());
    llvm::sys::fs::closeFile(FD);
  }
  return Result;
}

namespace {
json::Object unknownToJson(const std::map<std::string, UnknownCallee> &Unknown) {
  json::Object O;
  for (const auto &[USR, U] : Unknown)
    O[USR] = json::Array{U.Name, U.Pattern, U.Callers};
  return O;
}
} // namespace

void ResultCache::store(StringRef Key, const std::map<std::string, DependencyLog::Entry> &Deps,
                        const CachedTU &Result) {
  json::Array DepArray;
  for (const auto &[Path, E] : Deps) {
    if (E.K == DependencyLog::Kind::Content)
      DepArray.push_back(json::Array{Path, "content", E.Hash});
    else
      DepArray.push_back(json::Array{Path, E.K == DependencyLog::Kind::Missing ? "missing" : "exists"});
  }
  json::Object Digests; // raw bytes: stored as hex
  for (const auto &[File, Digest] : Result.Digests)
    Digests[File] = llvm::toHex(Digest, /*LowerCase=*/true);
  json::Object Entry{{"format", FormatVersion},
                     {"key", Key.str()},
                     {"deps", std::move(DepArray)},
                     {"findings", findingsToJson(Result.Findings)},
                     {"fixes", stepFixesToJson(Result.Fixes)},
                     {"digests", std::move(Digests)},
                     {"bodies-unchecked", Result.BodiesUnchecked},
                     {"fixes-deferred", Result.FixesDeferred},
                     {"summaries", Result.Summaries.toJSON()},
                     {"unknown-callees", unknownToJson(Result.UnknownCallees)}};
  std::string Path = entryPath(Key);
  llvm::SmallString<256> Model(llvm::sys::path::parent_path(Path));
  if (llvm::sys::fs::create_directories(Model))
    return; // an unwritable cache only costs time
  llvm::sys::path::append(Model, ".tmp-%%%%%%%%%%%%");
  int FD;
  llvm::SmallString<256> Temp;
  if (llvm::sys::fs::createUniqueFile(Model, FD, Temp))
    return;
  {
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << json::Value(std::move(Entry));
    OS.flush();
    if (OS.has_error()) {
      OS.clear_error();
      llvm::sys::fs::remove(Temp);
      return;
    }
  }
  // rename() replaces atomically: a concurrent run reads the old entry or this one, never a mix.
  if (llvm::sys::fs::rename(Temp, Path))
    llvm::sys::fs::remove(Temp);
}

void ResultCache::trim() {
  if (MaxSize == 0)
    return;
  struct Item {
    llvm::sys::TimePoint<> Time;
    uint64_t Size;
    std::string Path;
  };
  std::vector<Item> Items;
  uint64_t Total = 0;
  std::error_code EC;
  for (llvm::sys::fs::recursive_directory_iterator It(Dir, EC), End; It != End && !EC; It.increment(EC)) {
    if (llvm::sys::path::extension(It->path()) != ".json")
      continue;
    llvm::sys::fs::file_status S;
    if (llvm::sys::fs::status(It->path(), S) || S.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    Items.push_back({S.getLastModificationTime(), S.getSize(), It->path()});
    Total += S.getSize();
  }
  if (Total <= MaxSize)
    return;
  llvm::sort(Items, [](const Item &A, const Item &B) { return std::tie(A.Time, A.Path) < std::tie(B.Time, B.Path); });
  for (const Item &I : Items) {
    if (Total <= MaxSize)
      break;
    if (!llvm::sys::fs::remove(I.Path))
      Total -= I.Size;
  }
}

std::optional<uint64_t> parseByteSize(StringRef Text) {
  Text = Text.trim();
  uint64_t Scale = 1;
  if (!Text.empty()) {
    char Unit = llvm::toUpper(Text.back());
    if (Unit == 'K' || Unit == 'M' || Unit == 'G') {
      Scale = Unit == 'K' ? 1ull << 10 : Unit == 'M' ? 1ull << 20 : 1ull << 30;
      Text = Text.drop_back();
    }
  }
  uint64_t N;
  if (Text.empty() || Text.getAsInteger(10, N) || N > UINT64_MAX / Scale)
    return std::nullopt;
  return N * Scale;
}

json::Value findingsToJson(const std::vector<Finding> &Findings) {
  json::Array Out;
  for (const Finding &F : Findings) {
    json::Array Notes;
    for (const Note &N : F.Notes)
      Notes.push_back(json::Object{{"pos", posToJson(N.Pos)}, {"message", N.Message}});
    Out.push_back(json::Object{{"check", F.Check},
                               {"pos", posToJson(F.Pos)},
                               {"error", F.Level == Severity::Error},
                               {"message", F.Message},
                               {"notes", std::move(Notes)},
                               {"fixable", F.Fixable},
                               {"step", F.StepId},
                               {"template", F.Template},
                               {"uninstantiated", F.Uninstantiated}});
  }
  return Out;
}

std::optional<std::vector<Finding>> findingsFromJson(const json::Value &V) {
  const json::Array *A = V.getAsArray();
  if (!A)
    return std::nullopt;
  std::vector<Finding> Out;
  for (const json::Value &E : *A) {
    const json::Object *O = E.getAsObject();
    if (!O)
      return std::nullopt;
    Finding F;
    auto Check = O->getString("check"), Message = O->getString("message"), Step = O->getString("step");
    auto Error = O->getBoolean("error"), Fixable = O->getBoolean("fixable");
    const json::Array *Notes = O->getArray("notes");
    if (!Check || !Message || !Step || !Error || !Fixable || !Notes || !posFromJson(O->get("pos"), F.Pos))
      return std::nullopt;
    F.Check = Check->str();
    F.Message = Message->str();
    F.StepId = Step->str();
    if (auto T = O->getString("template"))
      F.Template = T->str();
    F.Uninstantiated = O->getBoolean("uninstantiated").value_or(false);
    F.Level = *Error ? Severity::Error : Severity::Warning;
    F.Fixable = *Fixable;
    for (const json::Value &NV : *Notes) {
      const json::Object *NO = NV.getAsObject();
      Note N;
      auto NM = NO ? NO->getString("message") : std::nullopt;
      if (!NM || !posFromJson(NO->get("pos"), N.Pos))
        return std::nullopt;
      N.Message = NM->str();
      F.Notes.push_back(std::move(N));
    }
    Out.push_back(std::move(F));
  }
  return Out;
}

json::Value stepFixesToJson(const std::vector<StepFix> &Fixes) {
  json::Array Out;
  for (const StepFix &S : Fixes) {
    json::Array Edits;
    for (const clang::tooling::Replacement &R : S.Edits)
      Edits.push_back(json::Array{R.getFilePath().str(), static_cast<int64_t>(R.getOffset()),
                                  static_cast<int64_t>(R.getLength()), R.getReplacementText().str()});
    Out.push_back(json::Object{{"step", S.StepId}, {"edits", std::move(Edits)}});
  }
  return Out;
}

std::optional<std::vector<StepFix>> stepFixesFromJson(const json::Value &V) {
  const json::Array *A = V.getAsArray();
  if (!A)
    return std::nullopt;
  std::vector<StepFix> Out;
  for (const json::Value &E : *A) {
    const json::Object *O = E.getAsObject();
    auto Step = O ? O->getString("step") : std::nullopt;
    const json::Array *Edits = O ? O->getArray("edits") : nullptr;
    if (!Step || !Edits)
      return std::nullopt;
    StepFix S;
    S.StepId = Step->str();
    for (const json::Value &RV : *Edits) {
      const json::Array *R = RV.getAsArray();
      if (!R || R->size() != 4)
        return std::nullopt;
      auto File = (*R)[0].getAsString(), Text = (*R)[3].getAsString();
      auto Off = (*R)[1].getAsInteger(), Len = (*R)[2].getAsInteger();
      if (!File || !Text || !Off || !Len)
        return std::nullopt;
      S.Edits.emplace_back(*File, static_cast<unsigned>(*Off), static_cast<unsigned>(*Len), *Text);
    }
    Out.push_back(std::move(S));
  }
  return Out;
}

} // namespace ampmigrate
