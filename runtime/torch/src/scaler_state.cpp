// Scaler checkpoints shared with Python PyTorch: the bytes of torch.save(scaler.state_dict()),
// written and read here; files are read only when they are regular and small (docs/reliability.md).
#include <amp/torch.h>

#include "checkpoint_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace amp {

namespace {

/// Python's GradScaler.state_dict() holds these two as ints, the other three as floats.
bool is_int_key(const std::string &key) {
  return key == "growth_interval" || key == "_growth_tracker";
}

/// The dict as pickle protocol 2 with plain opcodes only (no torch globals, unlike libtorch's
/// pickle_save, which tags dicts with torch.jit._pickle.restore_type_tag): Python's torch.load
/// with weights_only=True accepts exactly this.
std::vector<char> pickle_plain_dict(const std::map<std::string, double> &state) {
  std::vector<char> out{'\x80', '\x02', '}', '('}; // PROTO 2, EMPTY_DICT, MARK
  auto put_u32 = [&out](std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  };
  for (const auto &[key, value] : state) {
    out.push_back('X'); // BINUNICODE: u32 little-endian length, UTF-8
    put_u32(static_cast<std::uint32_t>(key.size()));
    out.insert(out.end(), key.begin(), key.end());
    if (is_int_key(key)) {
      out.push_back('J'); // BININT: i32 little-endian
      put_u32(static_cast<std::uint32_t>(static_cast<std::int32_t>(value)));
      continue;
    }
    out.push_back('G'); // BINFLOAT: IEEE double, big-endian
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (int i = 7; i >= 0; --i)
      out.push_back(static_cast<char>((bits >> (8 * i)) & 0xffu));
  }
  out.push_back('u'); // SETITEMS
  out.push_back('.'); // STOP
  return out;
}

[[noreturn]] void checkpoint_fail(const std::string &source, const std::string &problem) {
  throw Error(fmt::format("amp::load_scaler_state: {}: {}", source, problem));
}

/// The bytes as libtorch's zip reader reads them, never past their end. torch::pickle_load's own
/// in-memory reader copies whatever the zip reader asks for, unbounded, and on bytes that are not
/// a zip archive it is asked for 4 KiB past the end (a heap over-read; fuzz-scaler_state under
/// ASan, libtorch 1.13). A short read here makes the zip reader fail with a c10::Error instead.
class BoundedBytes final : public caffe2::serialize::ReadAdapterInterface {
public:
  explicit BoundedBytes(const std::vector<char> &bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void *buf, size_t n, const char * /*what*/) const override {
    if (pos >= bytes_.size())
      return 0;
    n = std::min<std::size_t>(n, bytes_.size() - static_cast<std::size_t>(pos));
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

private:
  const std::vector<char> &bytes_;
};

/// What torch.load returns for torch.save's archive of a plain object: its data.pkl unpickled
/// (torch::pickle_load's work, through BoundedBytes; a scaler state has no tensor records).
torch::IValue unpickle_archive(const std::vector<char> &bytes) {
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BoundedBytes>(bytes));
  auto [data, size] = reader.getRecord("data.pkl");
  return torch::jit::unpickle(static_cast<const char *>(data.get()), size);
}

/// torch.save of GradScaler.state_dict() writes about 1.4 KiB; anything past this is not one.
using detail::kMaxCheckpointBytes;

const char *kind_of(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Refuses what is not a regular file of at most kMaxCheckpointBytes.
void check_regular(const std::string &path, const struct stat &st) {
  if (!S_ISREG(st.st_mode))
    checkpoint_fail(path, fmt::format("{}, not a regular file", kind_of(st.st_mode)));
  if (static_cast<std::uint64_t>(st.st_size) > kMaxCheckpointBytes)
    checkpoint_fail(path, fmt::format("{} bytes, more than the 1 MiB a scaler state file may have "
                                      "(torch.save of GradScaler.state_dict() writes under 2 KiB)",
                                      st.st_size));
}

/// Closes a descriptor on every way out.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// The bytes of `path`, a regular file of at most kMaxCheckpointBytes. The path is looked at
/// before it is opened (opening a device can have effects of its own, and a FIFO would wait for
/// a writer), opened without blocking, and what was opened is checked again (the path may have
/// been replaced in between); at most the limit plus one byte is read (the file may grow).
std::vector<char> read_checkpoint(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(fmt::format("amp::load_scaler_state: cannot open {}: {}", path,
                            std::strerror(errno)));
  check_regular(path, st);
  FileDescriptor file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (file.fd < 0)
    throw Error(fmt::format("amp::load_scaler_state: cannot open {}: {}", path,
                            std::strerror(errno)));
  if (::fstat(file.fd, &st) != 0)
    checkpoint_fail(path, fmt::format("cannot read: {}", std::strerror(errno)));
  check_regular(path, st);
  std::vector<char> bytes(kMaxCheckpointBytes + 1);
  std::size_t size = 0;
  while (size < bytes.size()) {
    const ssize_t n = ::read(file.fd, bytes.data() + size, bytes.size() - size);
    if (n == 0)
      break;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      checkpoint_fail(path, fmt::format("cannot read: {}", std::strerror(errno)));
    }
    size += static_cast<std::size_t>(n);
  }
  if (size > kMaxCheckpointBytes)
    checkpoint_fail(path, "grew past the 1 MiB a scaler state file may have while it was read");
  bytes.resize(size);
  return bytes;
}

} // namespace

std::vector<char> scaler_state_bytes(const GradScaler &scaler) {
  const std::vector<char> data = pickle_plain_dict(scaler.state_dict());
  std::vector<char> bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&bytes](const void *p, std::size_t n) {
    const char *c = static_cast<const char *>(p);
    bytes.insert(bytes.end(), c, c + n);
    return n;
  });
  writer.writeRecord("data.pkl", data.data(), data.size());
  writer.writeRecord("byteorder", "little", 6);
  writer.writeEndOfFile(); // adds the version record, as torch.save's writer does
  return bytes;
}

void load_scaler_state_bytes(GradScaler &scaler, const std::vector<char> &bytes,
                             const std::string &source) {
  // Every size in the archive and its pickle held against the bytes first: libtorch allocates
  // what they claim before it finds out that the data is not there.
  detail::check_checkpoint_archive(bytes, source);
  torch::IValue loaded;
  try {
    loaded = unpickle_archive(bytes);
  } catch (const c10::Error &e) {
    checkpoint_fail(source,
                    fmt::format("not a file written by torch.save: {}", e.what_without_backtrace()));
  } catch (const std::exception &e) { // whatever else the reader throws on malformed input
    checkpoint_fail(source, fmt::format("not a file written by torch.save: {}", e.what()));
  }
  if (!loaded.isGenericDict())
    checkpoint_fail(source, fmt::format("holds a {}, not a GradScaler state dict", loaded.tagKind()));
  std::map<std::string, double> state;
  for (const auto &entry : loaded.toGenericDict()) {
    if (!entry.key().isString())
      checkpoint_fail(source, "has a key that is not a string");
    const std::string key = entry.key().toStringRef();
    const torch::IValue &value = entry.value();
    if (value.isDouble())
      state[key] = value.toDouble();
    else if (value.isInt())
      state[key] = static_cast<double>(value.toInt());
    else
      checkpoint_fail(source, fmt::format("key '{}' holds a {}, not a number", key, value.tagKind()));
  }
  try {
    scaler.load_state_dict(state);
  } catch (const Error &e) {
    checkpoint_fail(source, e.what());
  }
}

void save_scaler_state(const GradScaler &scaler, const std::string &path) {
  const std::vector<char> bytes = scaler_state_bytes(scaler);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    throw Error(fmt::format("amp::save_scaler_state: cannot write {}", path));
}

void load_scaler_state(GradScaler &scaler, const std::string &path) {
  load_scaler_state_bytes(scaler, read_checkpoint(path), path);
}

} // namespace amp
