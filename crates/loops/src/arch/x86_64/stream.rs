//! Streaming loops for bandwidth, written as likwid-bench writes its kernels: four 64-byte
//! lines per iteration, one vector instruction per access, a pointer compare to end. Three
//! widths: 64 bytes (AVX-512F), 32 (AVX2) and 16 (SSE2, which every x86-64 CPU has: the
//! width of CPUs without AVX2, likwid's `_sse` kernels). Each
//! function handles `bytes` (a multiple of 64) from `p`; a tail shorter than 256 bytes is
//! done a line at a time. `copy` reads `src` and writes `dst`. Loop heads are aligned to
//! 64 bytes (`.p2align 6`), where Debian's likwid-bench build has its kernels' loops.
#![allow(unsafe_code)]

use core::arch::asm;

macro_rules! stream64 {
    ($name:ident, $body4:literal, $body1:literal) => {
        /// # Safety
        /// `p` is 64-byte aligned and valid for `bytes` bytes (a multiple of 64); the CPU has
        /// AVX-512F.
        #[target_feature(enable = "avx512f")]
        pub unsafe fn $name(p: *mut u8, bytes: usize, v: u64) {
            let end = p as usize + bytes;
            let end4 = p as usize + bytes / 256 * 256;
            // SAFETY: the loops stay inside [p, p + bytes); the caller vouches for it.
            unsafe {
                asm!(
                    "vpbroadcastq zmm0, {v}",
                    "cmp {p}, {end4}",
                    "jae 3f",
                    ".p2align 6",
                    "2:",
                    $body4,
                    "add {p}, 256",
                    "cmp {p}, {end4}",
                    "jb 2b",
                    "3:",
                    "cmp {p}, {end}",
                    "jae 5f",
                    "4:",
                    $body1,
                    "add {p}, 64",
                    "cmp {p}, {end}",
                    "jb 4b",
                    "5:",
                    p = inout(reg) p => _,
                    end = in(reg) end,
                    end4 = in(reg) end4,
                    v = in(reg) v,
                    out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _,
                    options(nostack),
                );
            }
        }
    };
}

macro_rules! stream32 {
    ($name:ident, $body4:literal, $body1:literal) => {
        /// # Safety
        /// `p` is 64-byte aligned and valid for `bytes` bytes (a multiple of 64); the CPU has
        /// AVX2.
        #[target_feature(enable = "avx2")]
        pub unsafe fn $name(p: *mut u8, bytes: usize, v: u64) {
            let end = p as usize + bytes;
            let end4 = p as usize + bytes / 256 * 256;
            // SAFETY: the loops stay inside [p, p + bytes); the caller vouches for it.
            unsafe {
                asm!(
                    "vmovq xmm0, {v}",
                    "vpbroadcastq ymm0, xmm0",
                    "cmp {p}, {end4}",
                    "jae 3f",
                    ".p2align 6",
                    "2:",
                    $body4,
                    "add {p}, 256",
                    "cmp {p}, {end4}",
                    "jb 2b",
                    "3:",
                    "cmp {p}, {end}",
                    "jae 5f",
                    "4:",
                    $body1,
                    "add {p}, 64",
                    "cmp {p}, {end}",
                    "jb 4b",
                    "5:",
                    p = inout(reg) p => _,
                    end = in(reg) end,
                    end4 = in(reg) end4,
                    v = in(reg) v,
                    out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _, out("ymm4") _,
                    options(nostack),
                );
            }
        }
    };
}

macro_rules! stream16 {
    ($name:ident, $body4:literal, $body1:literal) => {
        /// # Safety
        /// `p` is 64-byte aligned and valid for `bytes` bytes (a multiple of 64); SSE2 is
        /// baseline x86-64 (a `clwb` in the body needs the CPU to have it).
        pub unsafe fn $name(p: *mut u8, bytes: usize, v: u64) {
            let end = p as usize + bytes;
            let end4 = p as usize + bytes / 256 * 256;
            // SAFETY: the loops stay inside [p, p + bytes); the caller vouches for it.
            unsafe {
                asm!(
                    "movq xmm0, {v}",
                    "punpcklqdq xmm0, xmm0",
                    "cmp {p}, {end4}",
                    "jae 3f",
                    ".p2align 6",
                    "2:",
                    $body4,
                    "add {p}, 256",
                    "cmp {p}, {end4}",
                    "jb 2b",
                    "3:",
                    "cmp {p}, {end}",
                    "jae 5f",
                    "4:",
                    $body1,
                    "add {p}, 64",
                    "cmp {p}, {end}",
                    "jb 4b",
                    "5:",
                    p = inout(reg) p => _,
                    end = in(reg) end,
                    end4 = in(reg) end4,
                    v = in(reg) v,
                    out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _, out("xmm4") _,
                    options(nostack),
                );
            }
        }
    };
}

stream64!(
    read64,
    "vmovdqa64 zmm1, [{p}]\nvmovdqa64 zmm2, [{p} + 64]\nvmovdqa64 zmm3, [{p} + 128]\nvmovdqa64 zmm4, [{p} + 192]",
    "vmovdqa64 zmm1, [{p}]"
);
stream64!(
    write64,
    "vmovdqa64 [{p}], zmm0\nvmovdqa64 [{p} + 64], zmm0\nvmovdqa64 [{p} + 128], zmm0\nvmovdqa64 [{p} + 192], zmm0",
    "vmovdqa64 [{p}], zmm0"
);
stream64!(
    ntstore64,
    "vmovntdq [{p}], zmm0\nvmovntdq [{p} + 64], zmm0\nvmovntdq [{p} + 128], zmm0\nvmovntdq [{p} + 192], zmm0",
    "vmovntdq [{p}], zmm0"
);
stream64!(
    store_clwb64,
    "vmovdqa64 [{p}], zmm0\nclwb [{p}]\nvmovdqa64 [{p} + 64], zmm0\nclwb [{p} + 64]\nvmovdqa64 [{p} + 128], zmm0\nclwb [{p} + 128]\nvmovdqa64 [{p} + 192], zmm0\nclwb [{p} + 192]",
    "vmovdqa64 [{p}], zmm0\nclwb [{p}]"
);
stream32!(
    read32,
    "vmovdqa ymm1, [{p}]\nvmovdqa ymm2, [{p} + 32]\nvmovdqa ymm3, [{p} + 64]\nvmovdqa ymm4, [{p} + 96]\nvmovdqa ymm1, [{p} + 128]\nvmovdqa ymm2, [{p} + 160]\nvmovdqa ymm3, [{p} + 192]\nvmovdqa ymm4, [{p} + 224]",
    "vmovdqa ymm1, [{p}]\nvmovdqa ymm2, [{p} + 32]"
);
stream32!(
    write32,
    "vmovdqa [{p}], ymm0\nvmovdqa [{p} + 32], ymm0\nvmovdqa [{p} + 64], ymm0\nvmovdqa [{p} + 96], ymm0\nvmovdqa [{p} + 128], ymm0\nvmovdqa [{p} + 160], ymm0\nvmovdqa [{p} + 192], ymm0\nvmovdqa [{p} + 224], ymm0",
    "vmovdqa [{p}], ymm0\nvmovdqa [{p} + 32], ymm0"
);
stream32!(
    ntstore32,
    "vmovntdq [{p}], ymm0\nvmovntdq [{p} + 32], ymm0\nvmovntdq [{p} + 64], ymm0\nvmovntdq [{p} + 96], ymm0\nvmovntdq [{p} + 128], ymm0\nvmovntdq [{p} + 160], ymm0\nvmovntdq [{p} + 192], ymm0\nvmovntdq [{p} + 224], ymm0",
    "vmovntdq [{p}], ymm0\nvmovntdq [{p} + 32], ymm0"
);
stream32!(
    store_clwb32,
    "vmovdqa [{p}], ymm0\nvmovdqa [{p} + 32], ymm0\nclwb [{p}]\nvmovdqa [{p} + 64], ymm0\nvmovdqa [{p} + 96], ymm0\nclwb [{p} + 64]\nvmovdqa [{p} + 128], ymm0\nvmovdqa [{p} + 160], ymm0\nclwb [{p} + 128]\nvmovdqa [{p} + 192], ymm0\nvmovdqa [{p} + 224], ymm0\nclwb [{p} + 192]",
    "vmovdqa [{p}], ymm0\nvmovdqa [{p} + 32], ymm0\nclwb [{p}]"
);

stream16!(
    read16,
    "movdqa xmm1, [{p}]\nmovdqa xmm2, [{p} + 16]\nmovdqa xmm3, [{p} + 32]\nmovdqa xmm4, [{p} + 48]\nmovdqa xmm1, [{p} + 64]\nmovdqa xmm2, [{p} + 80]\nmovdqa xmm3, [{p} + 96]\nmovdqa xmm4, [{p} + 112]\nmovdqa xmm1, [{p} + 128]\nmovdqa xmm2, [{p} + 144]\nmovdqa xmm3, [{p} + 160]\nmovdqa xmm4, [{p} + 176]\nmovdqa xmm1, [{p} + 192]\nmovdqa xmm2, [{p} + 208]\nmovdqa xmm3, [{p} + 224]\nmovdqa xmm4, [{p} + 240]",
    "movdqa xmm1, [{p}]\nmovdqa xmm2, [{p} + 16]\nmovdqa xmm3, [{p} + 32]\nmovdqa xmm4, [{p} + 48]"
);
stream16!(
    write16,
    "movdqa [{p}], xmm0\nmovdqa [{p} + 16], xmm0\nmovdqa [{p} + 32], xmm0\nmovdqa [{p} + 48], xmm0\nmovdqa [{p} + 64], xmm0\nmovdqa [{p} + 80], xmm0\nmovdqa [{p} + 96], xmm0\nmovdqa [{p} + 112], xmm0\nmovdqa [{p} + 128], xmm0\nmovdqa [{p} + 144], xmm0\nmovdqa [{p} + 160], xmm0\nmovdqa [{p} + 176], xmm0\nmovdqa [{p} + 192], xmm0\nmovdqa [{p} + 208], xmm0\nmovdqa [{p} + 224], xmm0\nmovdqa [{p} + 240], xmm0",
    "movdqa [{p}], xmm0\nmovdqa [{p} + 16], xmm0\nmovdqa [{p} + 32], xmm0\nmovdqa [{p} + 48], xmm0"
);
stream16!(
    ntstore16,
    "movntdq [{p}], xmm0\nmovntdq [{p} + 16], xmm0\nmovntdq [{p} + 32], xmm0\nmovntdq [{p} + 48], xmm0\nmovntdq [{p} + 64], xmm0\nmovntdq [{p} + 80], xmm0\nmovntdq [{p} + 96], xmm0\nmovntdq [{p} + 112], xmm0\nmovntdq [{p} + 128], xmm0\nmovntdq [{p} + 144], xmm0\nmovntdq [{p} + 160], xmm0\nmovntdq [{p} + 176], xmm0\nmovntdq [{p} + 192], xmm0\nmovntdq [{p} + 208], xmm0\nmovntdq [{p} + 224], xmm0\nmovntdq [{p} + 240], xmm0",
    "movntdq [{p}], xmm0\nmovntdq [{p} + 16], xmm0\nmovntdq [{p} + 32], xmm0\nmovntdq [{p} + 48], xmm0"
);
stream16!(
    store_clwb16,
    "movdqa [{p}], xmm0\nmovdqa [{p} + 16], xmm0\nmovdqa [{p} + 32], xmm0\nmovdqa [{p} + 48], xmm0\nclwb [{p}]\nmovdqa [{p} + 64], xmm0\nmovdqa [{p} + 80], xmm0\nmovdqa [{p} + 96], xmm0\nmovdqa [{p} + 112], xmm0\nclwb [{p} + 64]\nmovdqa [{p} + 128], xmm0\nmovdqa [{p} + 144], xmm0\nmovdqa [{p} + 160], xmm0\nmovdqa [{p} + 176], xmm0\nclwb [{p} + 128]\nmovdqa [{p} + 192], xmm0\nmovdqa [{p} + 208], xmm0\nmovdqa [{p} + 224], xmm0\nmovdqa [{p} + 240], xmm0\nclwb [{p} + 192]",
    "movdqa [{p}], xmm0\nmovdqa [{p} + 16], xmm0\nmovdqa [{p} + 32], xmm0\nmovdqa [{p} + 48], xmm0\nclwb [{p}]"
);

macro_rules! copy64 {
    ($(#[$doc:meta])* $name:ident, $store:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Both 64-byte aligned and valid for `bytes` (a multiple of 64) bytes, not
        /// overlapping; the CPU has AVX-512F.
        #[target_feature(enable = "avx512f")]
        pub unsafe fn $name(src: *const u8, dst: *mut u8, bytes: usize) {
            let end = src as usize + bytes;
            let end4 = src as usize + bytes / 256 * 256;
            // SAFETY: both ranges are valid for `bytes`; the loop advances both pointers
            // together.
            unsafe {
                asm!(
                    "cmp {s}, {end4}",
                    "jae 3f",
                    ".p2align 6",
                    "2:",
                    "vmovdqa64 zmm1, [{s}]",
                    "vmovdqa64 zmm2, [{s} + 64]",
                    "vmovdqa64 zmm3, [{s} + 128]",
                    "vmovdqa64 zmm4, [{s} + 192]",
                    concat!($store, " [{d}], zmm1"),
                    concat!($store, " [{d} + 64], zmm2"),
                    concat!($store, " [{d} + 128], zmm3"),
                    concat!($store, " [{d} + 192], zmm4"),
                    "add {s}, 256",
                    "add {d}, 256",
                    "cmp {s}, {end4}",
                    "jb 2b",
                    "3:",
                    "cmp {s}, {end}",
                    "jae 5f",
                    "4:",
                    "vmovdqa64 zmm1, [{s}]",
                    concat!($store, " [{d}], zmm1"),
                    "add {s}, 64",
                    "add {d}, 64",
                    "cmp {s}, {end}",
                    "jb 4b",
                    "5:",
                    s = inout(reg) src => _,
                    d = inout(reg) dst => _,
                    end = in(reg) end,
                    end4 = in(reg) end4,
                    out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _,
                    options(nostack),
                );
            }
        }
    };
}

macro_rules! copy32 {
    ($(#[$doc:meta])* $name:ident, $store:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Both 64-byte aligned and valid for `bytes` (a multiple of 64) bytes, not
        /// overlapping; the CPU has AVX2.
        #[target_feature(enable = "avx2")]
        pub unsafe fn $name(src: *const u8, dst: *mut u8, bytes: usize) {
            let end = src as usize + bytes;
            let end2 = src as usize + bytes / 128 * 128;
            // SAFETY: both ranges are valid for `bytes`; the loop advances both pointers
            // together.
            unsafe {
                asm!(
                    "cmp {s}, {end2}",
                    "jae 3f",
                    ".p2align 6",
                    "2:",
                    "vmovdqa ymm1, [{s}]",
                    "vmovdqa ymm2, [{s} + 32]",
                    "vmovdqa ymm3, [{s} + 64]",
                    "vmovdqa ymm4, [{s} + 96]",
                    concat!($store, " [{d}], ymm1"),
                    concat!($store, " [{d} + 32], ymm2"),
                    concat!($store, " [{d} + 64], ymm3"),
                    concat!($store, " [{d} + 96], ymm4"),
                    "add {s}, 128",
                    "add {d}, 128",
                    "cmp {s}, {end2}",
                    "jb 2b",
                    "3:",
                    "cmp {s}, {end}",
                    "jae 5f",
                    "vmovdqa ymm1, [{s}]",
                    "vmovdqa ymm2, [{s} + 32]",
                    concat!($store, " [{d}], ymm1"),
                    concat!($store, " [{d} + 32], ymm2"),
                    "5:",
                    s = inout(reg) src => _,
                    d = inout(reg) dst => _,
                    end = in(reg) end,
                    end2 = in(reg) end2,
                    out("ymm1") _, out("ymm2") _, out("ymm3") _, out("ymm4") _,
                    options(nostack),
                );
            }
        }
    };
}

copy64!(
    /// Copies `bytes` from `src` to `dst` with 64-byte loads and stores, four lines per
    /// iteration (likwid's `copy_avx512`).
    copy64,
    "vmovdqa64"
);
copy64!(
    /// As [`copy64`] with non-temporal stores (likwid's `copy_mem_avx512`; glibc's memcpy
    /// streams this way at sizes beyond the cache). The caller drains with an `sfence`.
    ntcopy64,
    "vmovntdq"
);
copy32!(
    /// As [`copy64`] with 32-byte AVX2 loads and stores, two lines per iteration (likwid's
    /// `copy_avx`: four loads, then four stores).
    copy32,
    "vmovdqa"
);
copy32!(
    /// As [`copy32`] with non-temporal stores (likwid's `copy_mem_avx`). The caller drains
    /// with an `sfence`.
    ntcopy32,
    "vmovntdq"
);

macro_rules! copy16 {
    ($(#[$doc:meta])* $name:ident, $store:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Both 64-byte aligned and valid for `bytes` (a multiple of 64) bytes, not
        /// overlapping; SSE2 is baseline x86-64.
        pub unsafe fn $name(src: *const u8, dst: *mut u8, bytes: usize) {
            let end = src as usize + bytes;
            // SAFETY: both ranges are valid for `bytes`; the loop advances both pointers
            // together, a line at a time.
            unsafe {
                asm!(
                    "cmp {s}, {end}",
                    "jae 3f",
                    ".p2align 6",
                    "2:",
                    "movdqa xmm1, [{s}]",
                    "movdqa xmm2, [{s} + 16]",
                    "movdqa xmm3, [{s} + 32]",
                    "movdqa xmm4, [{s} + 48]",
                    concat!($store, " [{d}], xmm1"),
                    concat!($store, " [{d} + 16], xmm2"),
                    concat!($store, " [{d} + 32], xmm3"),
                    concat!($store, " [{d} + 48], xmm4"),
                    "add {s}, 64",
                    "add {d}, 64",
                    "cmp {s}, {end}",
                    "jb 2b",
                    "3:",
                    s = inout(reg) src => _,
                    d = inout(reg) dst => _,
                    end = in(reg) end,
                    out("xmm1") _, out("xmm2") _, out("xmm3") _, out("xmm4") _,
                    options(nostack),
                );
            }
        }
    };
}

copy16!(
    /// As [`copy64`] with 16-byte SSE2 loads and stores, a line per iteration (likwid's
    /// `copy_sse`: four loads, then four stores).
    copy16,
    "movdqa"
);
copy16!(
    /// As [`copy16`] with non-temporal stores (likwid's `copy_mem_sse`). The caller drains
    /// with an `sfence`.
    ntcopy16,
    "movntdq"
);
