// libFuzzer harness: a scaler checkpoint (torch.save's zip of a pickled dict) as
// amp::load_scaler_state reads it. Any input loads a state that passes load_state_dict's checks, or
// is an amp::Error naming the source; any other exception, a crash or a hang is a finding.
#include <amp/torch.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size > (size_t{1} << 20))
    return 0; // load_scaler_state reads no file larger than 1 MiB
  const std::vector<char> Bytes(reinterpret_cast<const char *>(Data),
                                reinterpret_cast<const char *>(Data) + Size);
  amp::GradScaler Scaler;
  try {
    amp::load_scaler_state_bytes(Scaler, Bytes, "fuzz.pt");
  } catch (const amp::Error &E) {
    if (std::string(E.what()).find("amp::load_scaler_state: fuzz.pt: ") != 0)
      __builtin_trap(); // every error names the call and the source
    return 0;
  }
  // Loaded: the state is one load_state_dict accepts, and it survives a round trip.
  const double Scale = Scaler.get_scale();
  if (!(Scale > 0) || !std::isfinite(Scale) || Scaler.get_growth_tracker() < 0 ||
      Scaler.get_growth_tracker() >= Scaler.get_growth_interval())
    __builtin_trap();
  amp::GradScaler Again;
  amp::load_scaler_state_bytes(Again, amp::scaler_state_bytes(Scaler), "round trip");
  if (Again.state_dict() != Scaler.state_dict())
    __builtin_trap();
  return 0;
}
