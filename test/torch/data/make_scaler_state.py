#!/usr/bin/env python3
"""Writes scaler_state.pt: what `torch.save(scaler.state_dict(), path)` writes in Python PyTorch.

The state is that of a torch.amp.GradScaler(init_scale=4096.0, growth_factor=3.0,
backoff_factor=0.25, growth_interval=1000) 17 clean steps after its last growth: scale 4096.0 and
_growth_tracker 17 (non-default values everywhere, so a mixed-up key shows).

With PyTorch importable (`--use-torch`, e.g. on the GPU machine) the file is made by torch.save
itself. Without it, the same bytes are produced from the format torch.save documents and uses:
  * data.pkl: the dict pickled by the standard library's pickle.Pickler at protocol 2
    (torch.serialization.DEFAULT_PROTOCOL); torch.save's persistent_id hook returns None for
    anything that is not a storage, so for a dict of floats and ints the pickle is the stdlib's;
  * the zip container of PyTorchFileWriter: every record under "<archive>/" (archive = file name
    without extension), stored uncompressed, data aligned to 64 bytes by an extra field (id "FB",
    padded with "Z"), records in torch.save's order: data.pkl, .format_version ("1"),
    .storage_alignment ("64"), byteorder ("little"), then at the end of file version ("3\\n") and
    .data/serialization_id (40 digits; only an id, its value is not checked by any loader).
`--check PATH` compares PATH's data.pkl with a fresh torch.save of the same dict (run on a
machine with PyTorch by bench/device/run.sh): the pickles must be byte-identical.
"""
import argparse
import io
import os
import pickle
import struct
import sys
import zipfile

STATE = {
    "scale": 4096.0,
    "growth_factor": 3.0,
    "backoff_factor": 0.25,
    "growth_interval": 1000,
    "_growth_tracker": 17,
}
ALIGNMENT = 64


def pickled_state():
    buf = io.BytesIO()
    pickle.Pickler(buf, protocol=2).dump(STATE)
    return buf.getvalue()


def write_like_torch_save(path):
    archive = os.path.splitext(os.path.basename(path))[0]
    records = [
        ("data.pkl", pickled_state()),
        (".format_version", b"1"),
        (".storage_alignment", str(ALIGNMENT).encode()),
        ("byteorder", sys.byteorder.encode()),
        ("version", b"3\n"),
        (".data/serialization_id", b"0" * 40),
    ]
    with open(path, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
        for name, data in records:
            info = zipfile.ZipInfo(f"{archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            # The local header is 30 bytes + name + extra; pad the extra field so data starts
            # on a 64-byte boundary (an "FB" field of 4 header bytes plus padding).
            offset = f.tell() + 30 + len(info.filename.encode()) + 4
            pad = (-offset) % ALIGNMENT
            info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
            z.writestr(info, data)


def check(path):
    import torch  # noqa: F401  (only on a machine with PyTorch)
    with zipfile.ZipFile(path) as z:
        ours = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
    fresh = io.BytesIO()
    torch.save(dict(STATE), fresh)
    fresh.seek(0)
    with zipfile.ZipFile(fresh) as z:
        theirs = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
        names = sorted(n.split("/", 1)[1] for n in z.namelist())
    loaded = torch.load(path)  # weights_only=True by default in PyTorch >= 2.6: plain types only
    ok = ours == theirs and loaded == STATE
    print(f"scaler_state.pt vs torch {torch.__version__} torch.save: data.pkl "
          f"{'identical' if ours == theirs else 'DIFFERENT'}; torch.load gives "
          f"{'the same dict' if loaded == STATE else loaded}; torch.save's records: {names}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "scaler_state.pt"))
    ap.add_argument("--use-torch", action="store_true", help="write with torch.save (needs PyTorch)")
    ap.add_argument("--check", metavar="PATH", help="compare PATH with torch.save's output (needs PyTorch)")
    args = ap.parse_args()
    if args.check:
        return check(args.check)
    if args.use_torch:
        import torch
        torch.save(dict(STATE), args.out)
    else:
        write_like_torch_save(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
