// libFuzzer harness: the compilation database loader (makeCompilationDatabase with -p, then each
// file's entries as the driver resolves them before a parse). The input builds a small tree in a
// temporary directory (sources, missing or odd directories, symlink loops, FIFOs, names that are
// not UTF-8) and a compile_commands.json over it, garbled or not. Invariants: a database or an
// error naming the build directory; each file resolved to commands or to an error naming it;
// the process never changes its working directory; nothing outside the temporary directory is
// opened (open(2) is interposed and every descriptor is checked by its real path).
#include "ampmigrate/CompileDatabase.h"
#include "ampmigrate/Driver.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace {

bool Armed = false;         // the loader is running: watch what it opens and where it goes
std::string Sandbox;        // the real path of this input's temporary directory
std::vector<std::string> Escapes; // what the loader did that it must not

void noteOpened(int Fd, const char *Path) {
  if (!Armed || Fd < 0)
    return;
  char Link[64], Real[4096];
  std::snprintf(Link, sizeof Link, "/proc/self/fd/%d", Fd);
  ssize_t N = ::readlink(Link, Real, sizeof Real - 1);
  if (N < 0)
    return;
  std::string R(Real, static_cast<size_t>(N));
  if (R != Sandbox && R.rfind(Sandbox + "/", 0) != 0)
    Escapes.push_back("opened " + std::string(Path) + " (" + R + "), outside " + Sandbox);
}

} // namespace

// open(2) as LLVM's file reads call it: the system call itself, then a look at what was opened.
extern "C" int open(const char *Path, int Flags, ...) {
  mode_t Mode = 0;
  if (Flags & (O_CREAT | O_TMPFILE)) {
    va_list Args;
    va_start(Args, Flags);
    Mode = static_cast<mode_t>(va_arg(Args, int));
    va_end(Args);
  }
  int Fd = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, Path, Flags, Mode));
  noteOpened(Fd, Path);
  return Fd;
}

extern "C" int openat(int Dir, const char *Path, int Flags, ...) {
  mode_t Mode = 0;
  if (Flags & (O_CREAT | O_TMPFILE)) {
    va_list Args;
    va_start(Args, Flags);
    Mode = static_cast<mode_t>(va_arg(Args, int));
    va_end(Args);
  }
  int Fd = static_cast<int>(::syscall(SYS_openat, Dir, Path, Flags, Mode));
  noteOpened(Fd, Path);
  return Fd;
}

extern "C" int chdir(const char *Path) {
  if (Armed)
    Escapes.push_back(std::string("chdir(") + Path + ")");
  return static_cast<int>(::syscall(SYS_chdir, Path));
}

extern "C" int fchdir(int Fd) {
  if (Armed)
    Escapes.push_back("fchdir(" + std::to_string(Fd) + ")");
  return static_cast<int>(::syscall(SYS_fchdir, Fd));
}

namespace {

/// The tree and database an input describes, under `Root` (the database in `Root`/w/x/y/z, so that
/// the few `..` the names may hold stay inside the temporary directory).
class World {
public:
  World(FuzzedDataProvider &In, std::string Top) : In(In), Top(std::move(Top)), Db(this->Top + "/w/x/y/z") {}

  void build() {
    llvm::sys::fs::create_directories(Db);
    unsigned Items = In.ConsumeIntegralInRange<unsigned>(0, 8);
    for (unsigned I = 0; I < Items && In.remaining_bytes(); ++I)
      makeItem();
    makeDatabaseFile();
  }

  const std::string &dbDir() const { return Db; }
  std::vector<std::string> Named; ///< the "file" values written, to look up as the driver would

private:
  std::string name() {
    static const char *const Pool[] = {
        "a.cpp", "b.cc", "src", "src/c.cpp", "sub", "sub/d.cxx", "loop", "loop/a.cpp", "../z/a.cpp",
        "../../y/z/b.cc", "\xff\xfe.cpp", "n\xc3\x28.cpp", "back\\slash.cpp", "sp ace.cpp", "fifo.cpp",
        "dangling.cpp", "rsp", ".", "..", "compile_commands.json"};
    if (In.ConsumeBool())
      return Pool[In.ConsumeIntegralInRange<size_t>(0, std::size(Pool) - 1)];
    std::string S = In.ConsumeRandomLengthString(12);
    for (char &C : S)
      if (C == '/' || C == '\0')
        C = '_';
    return S.empty() ? "e.cpp" : S;
  }

  std::string path(const std::string &Name) const { return Name.rfind('/', 0) == 0 ? Name : Db + "/" + Name; }

  void makeItem() {
    std::string P = path(name());
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(P));
    switch (In.ConsumeIntegralInRange<int>(0, 8)) {
    case 0:
    case 1: // a source, maybe UTF-16, maybe a response file's arguments
      writeFile(P, In.ConsumeRandomLengthString(512));
      break;
    case 2:
      ::mkdir(P.c_str(), 0755);
      break;
    case 3: // a symlink to itself
      ::symlink(llvm::sys::path::filename(P).str().c_str(), P.c_str());
      break;
    case 4: // a pair that loops: P -> P2 -> P
      ::symlink((llvm::sys::path::filename(P) + "2").str().c_str(), P.c_str());
      ::symlink(llvm::sys::path::filename(P).str().c_str(), (P + "2").c_str());
      break;
    case 5:
      ::symlink(name().c_str(), P.c_str()); // to a sibling, maybe missing, maybe a directory
      break;
    case 6:
      ::mkfifo(P.c_str(), 0644);
      break;
    case 7: // devices are outside: they must be looked at, never opened
      ::symlink(In.ConsumeBool() ? "/dev/zero" : "/dev/null", P.c_str());
      break;
    default:
      writeFile(P, std::string("\xff\xfe", 2) + std::string(16, '\0'));
      break;
    }
  }

  static void writeFile(const std::string &P, const std::string &Text) {
    // Non-blocking: an earlier item may have made this name a FIFO.
    int Fd = ::open(P.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (Fd < 0)
      return;
    (void)!::write(Fd, Text.data(), Text.size());
    ::close(Fd);
  }

  /// A JSON string of a path: relative, absolute inside, missing, or odd bytes.
  std::string pathValue() {
    switch (In.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
      return quote(Db + "/" + name());
    case 1:
      return quote("/nonexistent-amp-fuzz/" + name());
    case 2:
      return quote(In.ConsumeBool() ? "/dev/zero" : "/dev/null");
    case 3:
      return In.ConsumeBool() ? "null" : "[\"a.cpp\"]"; // not a string
    case 4:
      return "\"" + In.ConsumeRandomLengthString(24) + "\""; // raw bytes, escapes and all
    default:
      return quote(name());
    }
  }

  static std::string quote(const std::string &S) {
    std::string Out = "\"";
    for (char C : S) {
      if (C == '"' || C == '\\')
        Out += '\\';
      Out += C;
    }
    return Out + "\"";
  }

  std::string argument() {
    static const char *const Pool[] = {"clang++", "-c", "-std=c++17", "-DX=1", "-I..", "@rsp", "@missing.rsp",
                                       "-o",      "a.o", "--driver-mode=g++", "-x", "c++", "'", "\\", "-include",
                                       "-Xclang", "-include-pch"};
    if (In.ConsumeBool())
      return quote(Pool[In.ConsumeIntegralInRange<size_t>(0, std::size(Pool) - 1)]);
    return pathValue();
  }

  std::string entry() {
    std::string E = "{";
    auto Field = [&](const std::string &Key, const std::string &Value) {
      if (E.size() > 1)
        E += ",";
      E += "\"" + Key + "\":" + Value;
    };
    if (In.ConsumeProbability<float>() < 0.9f)
      Field("directory", In.ConsumeBool() ? quote(In.ConsumeBool() ? Db : ".") : pathValue());
    if (In.ConsumeProbability<float>() < 0.9f) {
      std::string F = pathValue();
      if (F.size() > 1 && F.front() == '"')
        Named.push_back(F.substr(1, F.size() - 2));
      Field("file", F);
    }
    int Form = In.ConsumeIntegralInRange<int>(0, 3);
    if (Form & 1) {
      std::string A = "[";
      for (unsigned I = 0, N = In.ConsumeIntegralInRange<unsigned>(0, 6); I < N; ++I)
        A += (I ? "," : "") + argument();
      Field("arguments", A + "]");
    }
    if (Form & 2)
      Field("command", quote(In.ConsumeRandomLengthString(48)));
    if (In.ConsumeProbability<float>() < 0.1f)
      Field("output", argument());
    return E + "}";
  }

  void makeDatabaseFile() {
    std::string P = Db + "/compile_commands.json";
    switch (In.ConsumeIntegralInRange<int>(0, 9)) {
    case 0:
      ::mkdir(P.c_str(), 0755);
      return;
    case 1:
      ::mkfifo(P.c_str(), 0644);
      return;
    case 2:
      ::symlink("/dev/zero", P.c_str());
      return;
    case 3: // the rest of the input, as it is
      writeFile(P, In.ConsumeRemainingBytesAsString());
      return;
    default:
      break;
    }
    std::string Text = "[";
    for (unsigned I = 0, N = In.ConsumeIntegralInRange<unsigned>(0, 8); I < N && In.remaining_bytes(); ++I)
      Text += (I ? "," : "") + entry();
    Text += "]";
    if (In.ConsumeProbability<float>() < 0.2f) // garbled: cut short, or a byte replaced
      Text.resize(In.ConsumeIntegralInRange<size_t>(0, Text.size()));
    else if (In.ConsumeProbability<float>() < 0.2f && !Text.empty())
      Text[In.ConsumeIntegralInRange<size_t>(0, Text.size() - 1)] = In.ConsumeIntegral<char>();
    writeFile(P, Text);
  }

  FuzzedDataProvider &In;
  std::string Top, Db;
};

bool startsWith(const std::string &S, const std::string &Prefix) { return S.rfind(Prefix, 0) == 0; }

void fail(const std::string &What) {
  std::fprintf(stderr, "fuzz-compile_db: %s\n", What.c_str());
  __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size > 16384)
    return 0;
  FuzzedDataProvider In(Data, Size);
  char Template[] = "/tmp/fuzz-compile-db-XXXXXX";
  if (!::mkdtemp(Template))
    return 0;
  // The world is removed on every way out, FIFOs and all (llvm::sys::fs::remove_directories left
  // each world holding a FIFO behind: thousands of directories in /tmp after a CI run).
  struct RemoveWorld {
    const char *Dir;
    ~RemoveWorld() {
      std::error_code Ignored;
      std::filesystem::remove_all(Dir, Ignored);
    }
  } Remove{Template};
  char Real[4096];
  if (!::realpath(Template, Real))
    return 0;
  World W(In, Real);
  W.build();
  char Before[4096], After[4096];
  if (!::getcwd(Before, sizeof Before) || ::chdir(W.dbDir().c_str()) != 0)
    return 0;
  Sandbox = Real;
  Escapes.clear();

  Armed = true;
  std::string Error;
  std::unique_ptr<clang::tooling::CompilationDatabase> DB =
      ampmigrate::makeCompilationDatabase(W.dbDir(), {}, {}, Error);
  std::vector<std::pair<std::string, ampmigrate::driver::FileCommands>> Resolved;
  if (DB) {
    std::vector<std::string> Files = DB->getAllFiles();
    Files.insert(Files.end(), W.Named.begin(), W.Named.end());
    for (const std::string &F : Files) {
      Resolved.emplace_back(F, ampmigrate::driver::resolveFileCommands(*DB, F, {}));
      (void)ampmigrate::driver::configurationLabels(Resolved.back().second.Commands);
    }
  }
  Armed = false;
  bool CwdKept = ::getcwd(After, sizeof After) && std::string(After) == W.dbDir();

  if (!DB && !startsWith(Error, W.dbDir() + ": error: "))
    fail("a database error that does not name the build directory: " + Error);
  for (const auto &[Raw, R] : Resolved) {
    if (!R.Problem.empty()) {
      if (!startsWith(R.Problem, R.File + ": error: "))
        fail("an error that does not name its file " + R.File + ": " + R.Problem);
      continue;
    }
    // Resolved without a problem: every command's directory exists and the file is a regular one.
    if (R.Commands.empty())
      fail(R.File + ": no problem reported, but no compile command");
    for (const clang::tooling::CompileCommand &C : R.Commands)
      if (!llvm::sys::fs::is_directory(C.Directory))
        fail(R.File + ": no problem reported, but its entry's directory " + C.Directory + " is not one");
    struct stat St {};
    if (::stat(R.File.c_str(), &St) != 0 || !S_ISREG(St.st_mode))
      fail(R.File + ": no problem reported, but it is not a regular file");
  }
  if (!CwdKept)
    fail(std::string("the working directory moved to ") + After);
  if (!Escapes.empty())
    fail(Escapes.front());

  (void)::chdir(Before);
  return 0;
}
