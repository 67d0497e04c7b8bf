"""``python -m rcclx_nccl``: prints where the library is (for scripts and LD_LIBRARY_PATH)."""

from __future__ import annotations

import argparse

import rcclx_nccl


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rcclx_nccl", description=__doc__)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--libdir", action="store_true", help="directory of libnccl.so.2")
    what.add_argument(
        "--includedir", action="store_true", help="directory of nccl.h and nccl_device.h"
    )
    args = parser.parse_args(argv)
    if args.libdir:
        print(rcclx_nccl.library_dir())
    elif args.includedir:
        print(rcclx_nccl.include_dir())
    else:
        print(f"{rcclx_nccl.library_path()} (NCCL version code {rcclx_nccl.get_version()})")


if __name__ == "__main__":
    main()
