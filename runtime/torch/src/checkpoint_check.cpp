// Checks a scaler checkpoint's zip archive and its pickle before libtorch reads them: libtorch's
// reader allocates whatever a record's header claims, and its unpickler zero-fills a string of
// whatever length a BINUNICODE claims (up to 4 GiB from a 1.4 KiB file, fuzz-scaler_state), so
// every size is held against the bytes that are there first (docs/reliability.md).
#include "checkpoint_check.h"

#include <amp/runtime.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace amp::detail {

namespace {

[[noreturn]] void refuse(const std::string &source, const std::string &problem) {
  throw Error(fmt::format("amp::load_scaler_state: {}: {}", source, problem));
}

/// Little-endian fields of the bytes, or nothing past their end.
struct Bytes {
  std::string_view data;
  std::optional<std::uint64_t> le(std::size_t at, int width) const {
    if (at > data.size() || data.size() - at < static_cast<std::size_t>(width))
      return std::nullopt;
    std::uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i)
      v = (v << 8) | static_cast<unsigned char>(data[at + static_cast<std::size_t>(i)]);
    return v;
  }
};

constexpr std::uint32_t kEndOfCentralDirectory = 0x06054b50, kZip64Locator = 0x07064b50,
                        kZip64End = 0x06064b50, kCentralEntry = 0x02014b50, kLocalHeader = 0x04034b50;

struct CentralDirectory {
  std::uint64_t offset = 0, entries = 0;
};

CentralDirectory find_central_directory(const Bytes &z, const std::string &source) {
  // The end record is the last 22 bytes, or a comment of up to 64 KiB follows it.
  const std::size_t size = z.data.size();
  std::optional<std::size_t> end;
  for (std::size_t back = 22; back <= size && back <= 22 + 0xffff && !end; ++back)
    if (z.le(size - back, 4) == kEndOfCentralDirectory)
      end = size - back;
  if (!end)
    refuse(source, "not a file written by torch.save: no zip end-of-central-directory record");
  CentralDirectory cd{*z.le(*end + 16, 4), *z.le(*end + 10, 2)};
  // Zip64: the locator just before the end record points at the zip64 end record.
  if (*end >= 20 && z.le(*end - 20, 4) == kZip64Locator) {
    const std::uint64_t at = *z.le(*end - 20 + 8, 8);
    if (at > size || z.le(static_cast<std::size_t>(at), 4) != kZip64End || !z.le(static_cast<std::size_t>(at) + 56, 0))
      refuse(source, "not a file written by torch.save: a damaged zip64 end record");
    cd.entries = *z.le(static_cast<std::size_t>(at) + 32, 8);
    cd.offset = *z.le(static_cast<std::size_t>(at) + 48, 8);
  }
  if (cd.offset > size)
    refuse(source, fmt::format("not a file written by torch.save: the zip directory starts at {}, past "
                               "the end ({} bytes)", cd.offset, size));
  return cd;
}

/// A central-directory entry's sizes and offset, widened by its zip64 extra field where they are
/// 0xFFFFFFFF.
struct Entry {
  std::string_view name;
  std::uint64_t method = 0, compressed = 0, size = 0, local = 0;
};

void widen_zip64(const Bytes &z, std::size_t extra, std::size_t extra_len, Entry &e) {
  for (std::size_t at = extra; at + 4 <= extra + extra_len;) {
    const std::uint64_t id = *z.le(at, 2), len = *z.le(at + 2, 2);
    if (id == 1) {
      std::size_t field = at + 4;
      for (std::uint64_t *v : {&e.size, &e.compressed, &e.local})
        if (*v == 0xffffffffu && field + 8 <= at + 4 + len) {
          *v = *z.le(field, 8);
          field += 8;
        }
      return;
    }
    at += 4 + static_cast<std::size_t>(len);
  }
}

/// Which bytes a stored record occupies; refuses one that is compressed, large or cut off.
std::string_view record_bytes(const Bytes &z, const Entry &e, const std::string &source) {
  const std::string name(e.name);
  if (e.method != 0)
    refuse(source, fmt::format("record '{}' is compressed (zip method {}); torch.save stores records "
                               "uncompressed", name, e.method));
  if (e.size > kMaxCheckpointBytes || e.compressed != e.size)
    refuse(source, fmt::format("record '{}' claims {} bytes ({} stored), more than the 1 MiB a scaler "
                               "state may have or than are stored", name, e.size, e.compressed));
  const std::optional<std::uint64_t> name_len = z.le(static_cast<std::size_t>(std::min<std::uint64_t>(e.local, z.data.size())) + 26, 2);
  const std::optional<std::uint64_t> extra_len = z.le(static_cast<std::size_t>(std::min<std::uint64_t>(e.local, z.data.size())) + 28, 2);
  if (e.local > z.data.size() || z.le(static_cast<std::size_t>(e.local), 4) != kLocalHeader || !name_len || !extra_len)
    refuse(source, fmt::format("record '{}' has no local header at offset {}", name, e.local));
  const std::uint64_t start = e.local + 30 + *name_len + *extra_len;
  if (start > z.data.size() || z.data.size() - start < e.size)
    refuse(source, fmt::format("record '{}' ({} bytes at offset {}) runs past the end of the file ({} bytes)",
                               name, e.size, start, z.data.size()));
  return z.data.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(e.size));
}

bool same_name_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

} // namespace

void check_checkpoint_archive(const std::vector<char> &bytes, const std::string &source) {
  const Bytes z{std::string_view(bytes.data(), bytes.size())};
  const CentralDirectory cd = find_central_directory(z, source);
  std::size_t at = static_cast<std::size_t>(cd.offset);
  std::string prefix;
  std::optional<std::string_view> pickle;
  for (std::uint64_t i = 0; i < cd.entries; ++i) {
    const std::optional<std::uint64_t> name_len = z.le(at + 28, 2), extra_len = z.le(at + 30, 2),
                                       comment_len = z.le(at + 32, 2);
    if (z.le(at, 4) != kCentralEntry || !name_len || !extra_len || !comment_len ||
        !z.le(at + 46 + *name_len + *extra_len + *comment_len, 0))
      refuse(source, fmt::format("not a file written by torch.save: zip directory entry {} of {} is "
                                 "damaged (offset {})", i + 1, cd.entries, at));
    Entry e;
    e.name = z.data.substr(at + 46, static_cast<std::size_t>(*name_len));
    e.method = *z.le(at + 10, 2);
    e.compressed = *z.le(at + 20, 4);
    e.size = *z.le(at + 24, 4);
    e.local = *z.le(at + 42, 4);
    widen_zip64(z, at + 46 + static_cast<std::size_t>(*name_len), static_cast<std::size_t>(*extra_len), e);
    const std::string_view data = record_bytes(z, e, source);
    // libtorch names records "<archive>/<name>", <archive> being the first record's folder, and
    // looks them up ignoring case: the data.pkl it will read is the one checked here.
    if (i == 0)
      prefix = std::string(e.name.substr(0, e.name.find('/'))) + "/data.pkl";
    if (same_name_ignoring_case(e.name, prefix)) {
      if (pickle)
        refuse(source, fmt::format("the archive holds '{}' twice", prefix));
      pickle = data;
    }
    at += 46 + static_cast<std::size_t>(*name_len + *extra_len + *comment_len);
  }
  if (!pickle)
    refuse(source, "not a file written by torch.save: no data.pkl record");
  check_pickle(*pickle, source);
}

namespace {

/// How an opcode's argument is laid out after it.
enum class Arg { None, Fixed, Line, TwoLines, Length };

/// How an opcode moves the unpickler's stack: items taken from above the top mark and pushed,
/// or everything down to the mark taken; a put into or a get from the memo.
enum class Stack { Plain, Mark, ToMark, ToMarkOnto, Put, Get, Stop };

struct Opcode {
  unsigned char code;
  const char *name;
  Arg arg;
  int width; ///< bytes of a fixed argument or of a length field (signed when negative)
  Stack stack;
  int pop, push;
  bool pairs = false; ///< items down to the mark come in key/value pairs
};

// Pickle protocols 0-5 (CPython's Lib/pickletools.py documents each opcode).
constexpr Opcode kOpcodes[] = {
    {'(', "MARK", Arg::None, 0, Stack::Mark, 0, 0},
    {'.', "STOP", Arg::None, 0, Stack::Stop, 1, 0},
    {'0', "POP", Arg::None, 0, Stack::Plain, 1, 0},
    {'1', "POP_MARK", Arg::None, 0, Stack::ToMark, 0, 0},
    {'2', "DUP", Arg::None, 0, Stack::Plain, 1, 2},
    {'F', "FLOAT", Arg::Line, 0, Stack::Plain, 0, 1},
    {'I', "INT", Arg::Line, 0, Stack::Plain, 0, 1},
    {'J', "BININT", Arg::Fixed, 4, Stack::Plain, 0, 1},
    {'K', "BININT1", Arg::Fixed, 1, Stack::Plain, 0, 1},
    {'L', "LONG", Arg::Line, 0, Stack::Plain, 0, 1},
    {'M', "BININT2", Arg::Fixed, 2, Stack::Plain, 0, 1},
    {'N', "NONE", Arg::None, 0, Stack::Plain, 0, 1},
    {'P', "PERSID", Arg::Line, 0, Stack::Plain, 0, 1},
    {'Q', "BINPERSID", Arg::None, 0, Stack::Plain, 1, 1},
    {'R', "REDUCE", Arg::None, 0, Stack::Plain, 2, 1},
    {'S', "STRING", Arg::Line, 0, Stack::Plain, 0, 1},
    {'T', "BINSTRING", Arg::Length, -4, Stack::Plain, 0, 1},
    {'U', "SHORT_BINSTRING", Arg::Length, 1, Stack::Plain, 0, 1},
    {'V', "UNICODE", Arg::Line, 0, Stack::Plain, 0, 1},
    {'X', "BINUNICODE", Arg::Length, 4, Stack::Plain, 0, 1},
    {'a', "APPEND", Arg::None, 0, Stack::Plain, 2, 1},
    {'b', "BUILD", Arg::None, 0, Stack::Plain, 2, 1},
    {'c', "GLOBAL", Arg::TwoLines, 0, Stack::Plain, 0, 1},
    {'d', "DICT", Arg::None, 0, Stack::ToMark, 0, 1, true},
    {'}', "EMPTY_DICT", Arg::None, 0, Stack::Plain, 0, 1},
    {'e', "APPENDS", Arg::None, 0, Stack::ToMarkOnto, 0, 0},
    {'g', "GET", Arg::Line, 0, Stack::Get, 0, 1},
    {'h', "BINGET", Arg::Fixed, 1, Stack::Get, 0, 1},
    {'i', "INST", Arg::TwoLines, 0, Stack::ToMark, 0, 1},
    {'j', "LONG_BINGET", Arg::Fixed, 4, Stack::Get, 0, 1},
    {'l', "LIST", Arg::None, 0, Stack::ToMark, 0, 1},
    {']', "EMPTY_LIST", Arg::None, 0, Stack::Plain, 0, 1},
    {'o', "OBJ", Arg::None, 0, Stack::ToMark, 0, 1},
    {'p', "PUT", Arg::Line, 0, Stack::Put, 1, 1},
    {'q', "BINPUT", Arg::Fixed, 1, Stack::Put, 1, 1},
    {'r', "LONG_BINPUT", Arg::Fixed, 4, Stack::Put, 1, 1},
    {'s', "SETITEM", Arg::None, 0, Stack::Plain, 3, 1},
    {'t', "TUPLE", Arg::None, 0, Stack::ToMark, 0, 1},
    {')', "EMPTY_TUPLE", Arg::None, 0, Stack::Plain, 0, 1},
    {'u', "SETITEMS", Arg::None, 0, Stack::ToMarkOnto, 0, 0, true},
    {'G', "BINFLOAT", Arg::Fixed, 8, Stack::Plain, 0, 1},
    {0x80, "PROTO", Arg::Fixed, 1, Stack::Plain, 0, 0},
    {0x81, "NEWOBJ", Arg::None, 0, Stack::Plain, 2, 1},
    {0x82, "EXT1", Arg::Fixed, 1, Stack::Plain, 0, 1},
    {0x83, "EXT2", Arg::Fixed, 2, Stack::Plain, 0, 1},
    {0x84, "EXT4", Arg::Fixed, 4, Stack::Plain, 0, 1},
    {0x85, "TUPLE1", Arg::None, 0, Stack::Plain, 1, 1},
    {0x86, "TUPLE2", Arg::None, 0, Stack::Plain, 2, 1},
    {0x87, "TUPLE3", Arg::None, 0, Stack::Plain, 3, 1},
    {0x88, "NEWTRUE", Arg::None, 0, Stack::Plain, 0, 1},
    {0x89, "NEWFALSE", Arg::None, 0, Stack::Plain, 0, 1},
    {0x8a, "LONG1", Arg::Length, 1, Stack::Plain, 0, 1},
    {0x8b, "LONG4", Arg::Length, -4, Stack::Plain, 0, 1},
    {'B', "BINBYTES", Arg::Length, 4, Stack::Plain, 0, 1},
    {'C', "SHORT_BINBYTES", Arg::Length, 1, Stack::Plain, 0, 1},
    {0x8c, "SHORT_BINUNICODE", Arg::Length, 1, Stack::Plain, 0, 1},
    {0x8d, "BINUNICODE8", Arg::Length, 8, Stack::Plain, 0, 1},
    {0x8e, "BINBYTES8", Arg::Length, 8, Stack::Plain, 0, 1},
    {0x8f, "EMPTY_SET", Arg::None, 0, Stack::Plain, 0, 1},
    {0x90, "ADDITEMS", Arg::None, 0, Stack::ToMarkOnto, 0, 0},
    {0x91, "FROZENSET", Arg::None, 0, Stack::ToMark, 0, 1},
    {0x92, "NEWOBJ_EX", Arg::None, 0, Stack::Plain, 3, 1},
    {0x93, "STACK_GLOBAL", Arg::None, 0, Stack::Plain, 2, 1},
    {0x94, "MEMOIZE", Arg::None, 0, Stack::Put, 1, 1},
    {0x95, "FRAME", Arg::Fixed, 8, Stack::Plain, 0, 0},
    {0x96, "BYTEARRAY8", Arg::Length, 8, Stack::Plain, 0, 1},
    {0x97, "NEXT_BUFFER", Arg::None, 0, Stack::Plain, 0, 1},
    {0x98, "READONLY_BUFFER", Arg::None, 0, Stack::Plain, 1, 1},
};

const Opcode *find_opcode(unsigned char code) {
  for (const Opcode &op : kOpcodes)
    if (op.code == code)
      return &op;
  return nullptr;
}

/// One walk over a pickle: where it is, the items above each mark, the memo's size.
class PickleWalk {
public:
  PickleWalk(std::string_view pickle, const std::string &source) : p_{pickle}, source_(source) {}

  void run() {
    while (at_ < p_.data.size()) {
      const std::size_t start = at_;
      const unsigned char code = static_cast<unsigned char>(p_.data[at_++]);
      const Opcode *op = find_opcode(code);
      if (!op)
        fail(start, fmt::format("unknown pickle opcode 0x{:02x}", code));
      const std::optional<std::uint64_t> value = argument(*op, start);
      if (stack(*op, start, value))
        return; // STOP
    }
    fail(at_, "the pickle ends without STOP");
  }

private:
  [[noreturn]] void fail(std::size_t at, const std::string &what) const {
    refuse(source_, fmt::format("data.pkl: {} at offset {}; not a scaler state written by torch.save", what, at));
  }

  /// Skips the argument; returns a fixed argument's value (a memo index), or a line's number.
  std::optional<std::uint64_t> argument(const Opcode &op, std::size_t start) {
    const std::size_t left = p_.data.size() - at_;
    switch (op.arg) {
    case Arg::None:
      return std::nullopt;
    case Arg::Fixed: {
      const std::optional<std::uint64_t> v = p_.le(at_, op.width);
      if (!v)
        fail(start, fmt::format("{} needs {} bytes, {} remain", op.name, op.width, left));
      at_ += static_cast<std::size_t>(op.width);
      if (op.code == 0x80 && *v > 5)
        fail(start, fmt::format("pickle protocol {}", *v));
      if (op.code == 0x95 && *v > p_.data.size() - at_)
        fail(start, fmt::format("a FRAME of {} bytes, but {} remain", *v, p_.data.size() - at_));
      return v;
    }
    case Arg::Line:
    case Arg::TwoLines: {
      std::optional<std::uint64_t> number;
      for (int line = op.arg == Arg::Line ? 1 : 2; line > 0; --line) {
        const std::size_t nl = p_.data.find('\n', at_);
        if (nl == std::string_view::npos)
          fail(start, fmt::format("{} has no end of line", op.name));
        const std::string_view text = p_.data.substr(at_, nl - at_);
        if (!text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string_view::npos)
          number = std::stoull(std::string(text));
        at_ = nl + 1;
      }
      return number;
    }
    case Arg::Length: {
      const int width = op.width < 0 ? -op.width : op.width;
      const std::optional<std::uint64_t> raw = p_.le(at_, width);
      if (!raw)
        fail(start, fmt::format("{} needs a {}-byte length, {} bytes remain", op.name, width, left));
      at_ += static_cast<std::size_t>(width);
      std::uint64_t n = *raw;
      if (op.width < 0 && (n & 0x80000000u))
        fail(start, fmt::format("{} with a negative length", op.name));
      const std::size_t remain = p_.data.size() - at_;
      if (n > remain || n > kMaxCheckpointBytes)
        fail(start, fmt::format("{} says {} bytes, but {} remain", op.name, n, remain));
      at_ += static_cast<std::size_t>(n);
      return std::nullopt;
    }
    }
    return std::nullopt;
  }

  /// Applies the opcode to the stack model; true at STOP.
  bool stack(const Opcode &op, std::size_t start, std::optional<std::uint64_t> value) {
    auto take = [&](std::size_t n) {
      if (above_.back() < n)
        fail(start, fmt::format("{} takes {} item(s), {} on the stack above its mark", op.name, n, above_.back()));
      above_.back() -= n;
    };
    switch (op.stack) {
    case Stack::Mark:
      above_.push_back(0);
      return false;
    case Stack::Stop:
      take(1);
      return true;
    case Stack::ToMark:
    case Stack::ToMarkOnto: {
      if (above_.size() < 2)
        fail(start, fmt::format("{} without a MARK", op.name));
      const std::size_t items = above_.back();
      if (op.pairs && items % 2 != 0)
        fail(start, fmt::format("{} with an odd number ({}) of keys and values", op.name, items));
      if (op.code == 'o' && items < 1)
        fail(start, "OBJ without a class");
      above_.pop_back();
      if (op.stack == Stack::ToMarkOnto)
        take(1), above_.back() += 1; // the container the items go into stays
      above_.back() += static_cast<std::size_t>(op.push);
      return false;
    }
    case Stack::Put:
      take(1);
      above_.back() += 1;
      // libtorch appends to its memo whatever the index says (and reserves twice the index):
      // indices must come in order, as Python's pickler writes them.
      if (op.code != 0x94 && value != memo_)
        fail(start, fmt::format("{} of memo index {}, not the next one ({})", op.name,
                                value ? std::to_string(*value) : std::string("?"), memo_));
      ++memo_;
      return false;
    case Stack::Get:
      if (!value || *value >= memo_)
        fail(start, fmt::format("{} of memo index {}, which no put defined", op.name,
                                value ? std::to_string(*value) : std::string("?")));
      above_.back() += 1;
      return false;
    case Stack::Plain:
      take(static_cast<std::size_t>(op.pop));
      above_.back() += static_cast<std::size_t>(op.push);
      return false;
    }
    return false;
  }

  Bytes p_;
  const std::string &source_;
  std::size_t at_ = 0;
  std::vector<std::size_t> above_{0}; ///< items above each mark, the bottom first
  std::uint64_t memo_ = 0;
};

} // namespace

void check_pickle(std::string_view pickle, const std::string &source) { PickleWalk(pickle, source).run(); }

} // namespace amp::detail
