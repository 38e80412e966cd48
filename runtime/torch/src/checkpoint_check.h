// What load_scaler_state checks of a checkpoint before libtorch reads it (checkpoint_check.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace amp::detail {

/// The size bound of a scaler checkpoint, and so of every record and length inside it.
constexpr std::size_t kMaxCheckpointBytes = std::size_t{1} << 20;

/// Throws amp::Error ("amp::load_scaler_state: SOURCE: ...") unless `bytes` is a zip archive whose
/// records are all stored (uncompressed, as torch.save writes them), at most kMaxCheckpointBytes
/// each and inside the bytes, with exactly one "<archive>/data.pkl" whose pickle passes
/// check_pickle. libtorch's reader allocates what a record's header claims and its unpickler
/// what a length field claims, before either is checked against the data.
void check_checkpoint_archive(const std::vector<char> &bytes, const std::string &source);

/// Walks a pickle's opcodes (protocols 0-5) without building anything and throws amp::Error naming
/// `source`, the opcode and its offset for: an unknown opcode; a length field (strings, bytes,
/// longs, frames) larger than the bytes that remain or than kMaxCheckpointBytes; a line argument
/// without its newline; an opcode that takes more items than the stack holds above its mark, a
/// mark that is missing, an odd number of dict items; a memo index that is not the next one (a
/// put) or not yet defined (a get); no STOP.
void check_pickle(std::string_view pickle, const std::string &source);

} // namespace amp::detail
