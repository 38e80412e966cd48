// A project guard class (a RAII autocast scope), defined in a header of the shared lines.
#pragma once
#include <ATen/autocast_mode.h>
struct ProjectAutocast {
  ProjectAutocast() { at::autocast::set_enabled(true); }
  ~ProjectAutocast() { at::autocast::set_enabled(false); }
};
