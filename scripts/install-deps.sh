#!/usr/bin/env bash
# Installs the build and test dependencies from Debian's archive (no other network is needed).
set -euo pipefail
# golang-go and mono-devel build and run the Go and C# FFI examples (their ctests are added only
# when the toolchain is found); Rust's cargo comes with the machine image. clang-format is for
# scripts/format-check.sh (Debian 12 ships version 14, the one .clang-format is checked with).
# The aarch64 cross build and its qemu test run (scripts/test-aarch64.sh): Debian's cross toolchain,
# qemu-user, and the two libraries the library links as arm64 multiarch packages (Catch2 2 and
# nlohmann-json are header-only and shared by both architectures).
pkgs=(build-essential cmake pkg-config catch2 libfmt-dev libbenchmark-dev libutf8proc-dev
      nlohmann-json3-dev python3 xz-utils golang-go mono-devel binutils clang clang-format
      g++-aarch64-linux-gnu qemu-user libfmt-dev:arm64 libutf8proc-dev:arm64)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
