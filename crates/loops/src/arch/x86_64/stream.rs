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

/// How far ahead of its accesses a page-ahead stream ([`ntstore64_ahead`], [`read64_ahead`]
/// and their kin) touches the memory: 4 pages. On 4 KiB pages a sequential stream meets a TLB
/// miss at every page, and the hardware prefetchers stop at page boundaries: a `prefetcht0` of
/// the page 4 ahead has its table walk done, and its first line on the way, when the stream
/// arrives. Measured on the Zen 4 guest in C side by side: non-temporal fills 2-5 % more GB/s
/// at 1 and 2 threads for any distance from 1 to 16 pages (none on 2 MiB pages, where there is
/// one walk per 512 pages), one-thread reads 12-21 % for 4 to 16 pages. On 2 MiB pages
/// `read-ahead` read 14 % slower than `read` in pmscope (cause not found): these are 4 KiB
/// page ops.
pub const AHEAD_PAGES: usize = 4;

macro_rules! page_ahead {
    ($name:ident, $plain:ident, $feat:literal, $setup:literal, $body4:literal, $($clobber:tt),+) => {
        /// As the plain loop of the same op and width, page by page, with a `prefetcht0` of the
        /// first line [`AHEAD_PAGES`] pages ahead before each page's accesses. The last pages,
        /// whose page ahead lies past `bytes`, and a tail shorter than a page, are done by the
        /// plain loop, so nothing outside `[p, p + bytes)` is touched. A non-temporal fill's
        /// caller drains with an `sfence`.
        ///
        /// # Safety
        #[doc = concat!("`p` is 64-byte aligned and valid for `bytes` bytes (a multiple of 64); the CPU has ", $feat, ".")]
        #[target_feature(enable = $feat)]
        pub unsafe fn $name(p: *mut u8, bytes: usize, v: u64) {
            let pages = (bytes / PAGE).saturating_sub(AHEAD_PAGES);
            // SAFETY: each of the `pages` pages and the page AHEAD_PAGES after it lie in
            // [p, p + bytes); the rest is the plain loop's, on the caller's range.
            unsafe {
                if pages > 0 {
                    asm!(
                        $setup,
                        ".p2align 6",
                        "2:",
                        "prefetcht0 [{p} + {ahead}]",
                        "mov {i}, 16",
                        "3:",
                        $body4,
                        "add {p}, 256",
                        "dec {i}",
                        "jnz 3b",
                        "dec {n}",
                        "jnz 2b",
                        p = inout(reg) p => _,
                        n = inout(reg) pages => _,
                        i = out(reg) _,
                        v = in(reg) v,
                        ahead = const AHEAD_PAGES * PAGE,
                        $(out($clobber) _,)+
                        options(nostack),
                    );
                }
                let done = pages * PAGE;
                $plain(p.add(done), bytes - done, v);
            }
        }
    };
}

page_ahead!(
    ntstore64_ahead,
    ntstore64,
    "avx512f",
    "vpbroadcastq zmm0, {v}",
    "vmovntdq [{p}], zmm0\nvmovntdq [{p} + 64], zmm0\nvmovntdq [{p} + 128], zmm0\nvmovntdq [{p} + 192], zmm0",
    "zmm0"
);
page_ahead!(
    ntstore32_ahead,
    ntstore32,
    "avx2",
    "vmovq xmm0, {v}\nvpbroadcastq ymm0, xmm0",
    "vmovntdq [{p}], ymm0\nvmovntdq [{p} + 32], ymm0\nvmovntdq [{p} + 64], ymm0\nvmovntdq [{p} + 96], ymm0\nvmovntdq [{p} + 128], ymm0\nvmovntdq [{p} + 160], ymm0\nvmovntdq [{p} + 192], ymm0\nvmovntdq [{p} + 224], ymm0",
    "ymm0"
);
page_ahead!(
    ntstore16_ahead,
    ntstore16,
    "sse2",
    "movq xmm0, {v}\npunpcklqdq xmm0, xmm0",
    "movntdq [{p}], xmm0\nmovntdq [{p} + 16], xmm0\nmovntdq [{p} + 32], xmm0\nmovntdq [{p} + 48], xmm0\nmovntdq [{p} + 64], xmm0\nmovntdq [{p} + 80], xmm0\nmovntdq [{p} + 96], xmm0\nmovntdq [{p} + 112], xmm0\nmovntdq [{p} + 128], xmm0\nmovntdq [{p} + 144], xmm0\nmovntdq [{p} + 160], xmm0\nmovntdq [{p} + 176], xmm0\nmovntdq [{p} + 192], xmm0\nmovntdq [{p} + 208], xmm0\nmovntdq [{p} + 224], xmm0\nmovntdq [{p} + 240], xmm0",
    "xmm0"
);
// The reads load what the plain reads load; the value is not used (the setup only names it).
page_ahead!(
    read64_ahead,
    read64,
    "avx512f",
    "vmovq xmm0, {v}",
    "vmovdqa64 zmm1, [{p}]\nvmovdqa64 zmm2, [{p} + 64]\nvmovdqa64 zmm3, [{p} + 128]\nvmovdqa64 zmm4, [{p} + 192]",
    "zmm0",
    "zmm1",
    "zmm2",
    "zmm3",
    "zmm4"
);
page_ahead!(
    read32_ahead,
    read32,
    "avx2",
    "vmovq xmm0, {v}",
    "vmovdqa ymm1, [{p}]\nvmovdqa ymm2, [{p} + 32]\nvmovdqa ymm3, [{p} + 64]\nvmovdqa ymm4, [{p} + 96]\nvmovdqa ymm1, [{p} + 128]\nvmovdqa ymm2, [{p} + 160]\nvmovdqa ymm3, [{p} + 192]\nvmovdqa ymm4, [{p} + 224]",
    "ymm0",
    "ymm1",
    "ymm2",
    "ymm3",
    "ymm4"
);
page_ahead!(
    read16_ahead,
    read16,
    "sse2",
    "movq xmm0, {v}",
    "movdqa xmm1, [{p}]\nmovdqa xmm2, [{p} + 16]\nmovdqa xmm3, [{p} + 32]\nmovdqa xmm4, [{p} + 48]\nmovdqa xmm1, [{p} + 64]\nmovdqa xmm2, [{p} + 80]\nmovdqa xmm3, [{p} + 96]\nmovdqa xmm4, [{p} + 112]\nmovdqa xmm1, [{p} + 128]\nmovdqa xmm2, [{p} + 144]\nmovdqa xmm3, [{p} + 160]\nmovdqa xmm4, [{p} + 176]\nmovdqa xmm1, [{p} + 192]\nmovdqa xmm2, [{p} + 208]\nmovdqa xmm3, [{p} + 224]\nmovdqa xmm4, [{p} + 240]",
    "xmm0",
    "xmm1",
    "xmm2",
    "xmm3",
    "xmm4"
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

/// The page of glibc's interleaved streams.
const PAGE: usize = 4096;

/// As [`ntcopy64`], over 4 pages at a time, the way glibc's memcpy streams beyond
/// `__x86_shared_non_temporal_threshold` (`large_memcpy_4x`): each iteration loads four
/// 64-byte vectors from each of 4 pages 4 KiB apart, then stores them non-temporally,
/// with a `prefetcht0` of every line two iterations ahead in each page; after a page's
/// last iteration the next 4 pages follow. A tail shorter than 4 pages is done by
/// [`ntcopy64`]. The caller drains with an `sfence`.
///
/// # Safety
/// Both 64-byte aligned and valid for `bytes` (a multiple of 64) bytes, not overlapping;
/// the CPU has AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn ntcopy64_pages(src: *const u8, dst: *mut u8, bytes: usize) {
    let chunk = 4 * PAGE;
    let chunks = bytes / chunk;
    // SAFETY: every chunk of 4 pages lies in both ranges; the loads and stores stay
    // in the chunk (the prefetches may run past it, harmlessly: a prefetch never faults).
    unsafe {
        if chunks > 0 {
            asm!(
                ".p2align 6",
                "2:",
                "mov {i}, 16",
                "3:",
                    "prefetcht0 [{s} + {ahead} + 0]",
                    "prefetcht0 [{s} + {ahead} + 64]",
                    "prefetcht0 [{s} + {ahead} + 128]",
                    "prefetcht0 [{s} + {ahead} + 192]",
                    "prefetcht0 [{s} + {ahead} + 4096]",
                    "prefetcht0 [{s} + {ahead} + 4160]",
                    "prefetcht0 [{s} + {ahead} + 4224]",
                    "prefetcht0 [{s} + {ahead} + 4288]",
                    "prefetcht0 [{s} + {ahead} + 8192]",
                    "prefetcht0 [{s} + {ahead} + 8256]",
                    "prefetcht0 [{s} + {ahead} + 8320]",
                    "prefetcht0 [{s} + {ahead} + 8384]",
                    "prefetcht0 [{s} + {ahead} + 12288]",
                    "prefetcht0 [{s} + {ahead} + 12352]",
                    "prefetcht0 [{s} + {ahead} + 12416]",
                    "prefetcht0 [{s} + {ahead} + 12480]",
                    "vmovdqa64 zmm0, [{s} + 0]",
                    "vmovdqa64 zmm1, [{s} + 64]",
                    "vmovdqa64 zmm2, [{s} + 128]",
                    "vmovdqa64 zmm3, [{s} + 192]",
                    "vmovdqa64 zmm4, [{s} + 4096]",
                    "vmovdqa64 zmm5, [{s} + 4160]",
                    "vmovdqa64 zmm6, [{s} + 4224]",
                    "vmovdqa64 zmm7, [{s} + 4288]",
                    "vmovdqa64 zmm8, [{s} + 8192]",
                    "vmovdqa64 zmm9, [{s} + 8256]",
                    "vmovdqa64 zmm10, [{s} + 8320]",
                    "vmovdqa64 zmm11, [{s} + 8384]",
                    "vmovdqa64 zmm12, [{s} + 12288]",
                    "vmovdqa64 zmm13, [{s} + 12352]",
                    "vmovdqa64 zmm14, [{s} + 12416]",
                    "vmovdqa64 zmm15, [{s} + 12480]",
                    "vmovntdq [{d} + 0], zmm0",
                    "vmovntdq [{d} + 64], zmm1",
                    "vmovntdq [{d} + 128], zmm2",
                    "vmovntdq [{d} + 192], zmm3",
                    "vmovntdq [{d} + 4096], zmm4",
                    "vmovntdq [{d} + 4160], zmm5",
                    "vmovntdq [{d} + 4224], zmm6",
                    "vmovntdq [{d} + 4288], zmm7",
                    "vmovntdq [{d} + 8192], zmm8",
                    "vmovntdq [{d} + 8256], zmm9",
                    "vmovntdq [{d} + 8320], zmm10",
                    "vmovntdq [{d} + 8384], zmm11",
                    "vmovntdq [{d} + 12288], zmm12",
                    "vmovntdq [{d} + 12352], zmm13",
                    "vmovntdq [{d} + 12416], zmm14",
                    "vmovntdq [{d} + 12480], zmm15",
                "add {s}, 256",
                "add {d}, 256",
                "dec {i}",
                "jnz 3b",
                "add {s}, 12288",
                "add {d}, 12288",
                "dec {n}",
                "jnz 2b",
                s = inout(reg) src => _,
                d = inout(reg) dst => _,
                n = inout(reg) chunks => _,
                i = out(reg) _,
                ahead = const 2 * 256,
                out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _, out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _, out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _,
                options(nostack),
            );
        }
        let done = chunks * chunk;
        ntcopy64(src.add(done), dst.add(done), bytes - done);
    }
}

/// As [`ntcopy32`], over 4 pages at a time, the way glibc's memcpy streams beyond
/// `__x86_shared_non_temporal_threshold` (`large_memcpy_4x`): each iteration loads four
/// 32-byte vectors from each of 4 pages 4 KiB apart, then stores them non-temporally,
/// with a `prefetcht0` of every line two iterations ahead in each page; after a page's
/// last iteration the next 4 pages follow. A tail shorter than 4 pages is done by
/// [`ntcopy32`]. The caller drains with an `sfence`.
///
/// # Safety
/// Both 64-byte aligned and valid for `bytes` (a multiple of 64) bytes, not overlapping;
/// the CPU has AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn ntcopy32_pages(src: *const u8, dst: *mut u8, bytes: usize) {
    let chunk = 4 * PAGE;
    let chunks = bytes / chunk;
    // SAFETY: every chunk of 4 pages lies in both ranges; the loads and stores stay
    // in the chunk (the prefetches may run past it, harmlessly: a prefetch never faults).
    unsafe {
        if chunks > 0 {
            asm!(
                ".p2align 6",
                "2:",
                "mov {i}, 32",
                "3:",
                    "prefetcht0 [{s} + {ahead} + 0]",
                    "prefetcht0 [{s} + {ahead} + 64]",
                    "prefetcht0 [{s} + {ahead} + 4096]",
                    "prefetcht0 [{s} + {ahead} + 4160]",
                    "prefetcht0 [{s} + {ahead} + 8192]",
                    "prefetcht0 [{s} + {ahead} + 8256]",
                    "prefetcht0 [{s} + {ahead} + 12288]",
                    "prefetcht0 [{s} + {ahead} + 12352]",
                    "vmovdqa ymm0, [{s} + 0]",
                    "vmovdqa ymm1, [{s} + 32]",
                    "vmovdqa ymm2, [{s} + 64]",
                    "vmovdqa ymm3, [{s} + 96]",
                    "vmovdqa ymm4, [{s} + 4096]",
                    "vmovdqa ymm5, [{s} + 4128]",
                    "vmovdqa ymm6, [{s} + 4160]",
                    "vmovdqa ymm7, [{s} + 4192]",
                    "vmovdqa ymm8, [{s} + 8192]",
                    "vmovdqa ymm9, [{s} + 8224]",
                    "vmovdqa ymm10, [{s} + 8256]",
                    "vmovdqa ymm11, [{s} + 8288]",
                    "vmovdqa ymm12, [{s} + 12288]",
                    "vmovdqa ymm13, [{s} + 12320]",
                    "vmovdqa ymm14, [{s} + 12352]",
                    "vmovdqa ymm15, [{s} + 12384]",
                    "vmovntdq [{d} + 0], ymm0",
                    "vmovntdq [{d} + 32], ymm1",
                    "vmovntdq [{d} + 64], ymm2",
                    "vmovntdq [{d} + 96], ymm3",
                    "vmovntdq [{d} + 4096], ymm4",
                    "vmovntdq [{d} + 4128], ymm5",
                    "vmovntdq [{d} + 4160], ymm6",
                    "vmovntdq [{d} + 4192], ymm7",
                    "vmovntdq [{d} + 8192], ymm8",
                    "vmovntdq [{d} + 8224], ymm9",
                    "vmovntdq [{d} + 8256], ymm10",
                    "vmovntdq [{d} + 8288], ymm11",
                    "vmovntdq [{d} + 12288], ymm12",
                    "vmovntdq [{d} + 12320], ymm13",
                    "vmovntdq [{d} + 12352], ymm14",
                    "vmovntdq [{d} + 12384], ymm15",
                "add {s}, 128",
                "add {d}, 128",
                "dec {i}",
                "jnz 3b",
                "add {s}, 12288",
                "add {d}, 12288",
                "dec {n}",
                "jnz 2b",
                s = inout(reg) src => _,
                d = inout(reg) dst => _,
                n = inout(reg) chunks => _,
                i = out(reg) _,
                ahead = const 2 * 128,
                out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _, out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _, out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _, out("ymm12") _, out("ymm13") _, out("ymm14") _, out("ymm15") _,
                options(nostack),
            );
        }
        let done = chunks * chunk;
        ntcopy32(src.add(done), dst.add(done), bytes - done);
    }
}

/// As [`ntcopy16`], over 4 pages at a time, the way glibc's memcpy streams beyond
/// `__x86_shared_non_temporal_threshold` (`large_memcpy_4x`): each iteration loads four
/// 16-byte vectors from each of 4 pages 4 KiB apart, then stores them non-temporally,
/// with a `prefetcht0` of every line two iterations ahead in each page; after a page's
/// last iteration the next 4 pages follow. A tail shorter than 4 pages is done by
/// [`ntcopy16`]. The caller drains with an `sfence`.
///
/// # Safety
/// Both 64-byte aligned and valid for `bytes` (a multiple of 64) bytes, not overlapping;
/// SSE2 is baseline x86-64.
pub unsafe fn ntcopy16_pages(src: *const u8, dst: *mut u8, bytes: usize) {
    let chunk = 4 * PAGE;
    let chunks = bytes / chunk;
    // SAFETY: every chunk of 4 pages lies in both ranges; the loads and stores stay
    // in the chunk (the prefetches may run past it, harmlessly: a prefetch never faults).
    unsafe {
        if chunks > 0 {
            asm!(
                ".p2align 6",
                "2:",
                "mov {i}, 64",
                "3:",
                    "prefetcht0 [{s} + {ahead} + 0]",
                    "prefetcht0 [{s} + {ahead} + 4096]",
                    "prefetcht0 [{s} + {ahead} + 8192]",
                    "prefetcht0 [{s} + {ahead} + 12288]",
                    "movdqa xmm0, [{s} + 0]",
                    "movdqa xmm1, [{s} + 16]",
                    "movdqa xmm2, [{s} + 32]",
                    "movdqa xmm3, [{s} + 48]",
                    "movdqa xmm4, [{s} + 4096]",
                    "movdqa xmm5, [{s} + 4112]",
                    "movdqa xmm6, [{s} + 4128]",
                    "movdqa xmm7, [{s} + 4144]",
                    "movdqa xmm8, [{s} + 8192]",
                    "movdqa xmm9, [{s} + 8208]",
                    "movdqa xmm10, [{s} + 8224]",
                    "movdqa xmm11, [{s} + 8240]",
                    "movdqa xmm12, [{s} + 12288]",
                    "movdqa xmm13, [{s} + 12304]",
                    "movdqa xmm14, [{s} + 12320]",
                    "movdqa xmm15, [{s} + 12336]",
                    "movntdq [{d} + 0], xmm0",
                    "movntdq [{d} + 16], xmm1",
                    "movntdq [{d} + 32], xmm2",
                    "movntdq [{d} + 48], xmm3",
                    "movntdq [{d} + 4096], xmm4",
                    "movntdq [{d} + 4112], xmm5",
                    "movntdq [{d} + 4128], xmm6",
                    "movntdq [{d} + 4144], xmm7",
                    "movntdq [{d} + 8192], xmm8",
                    "movntdq [{d} + 8208], xmm9",
                    "movntdq [{d} + 8224], xmm10",
                    "movntdq [{d} + 8240], xmm11",
                    "movntdq [{d} + 12288], xmm12",
                    "movntdq [{d} + 12304], xmm13",
                    "movntdq [{d} + 12320], xmm14",
                    "movntdq [{d} + 12336], xmm15",
                "add {s}, 64",
                "add {d}, 64",
                "dec {i}",
                "jnz 3b",
                "add {s}, 12288",
                "add {d}, 12288",
                "dec {n}",
                "jnz 2b",
                s = inout(reg) src => _,
                d = inout(reg) dst => _,
                n = inout(reg) chunks => _,
                i = out(reg) _,
                ahead = const 2 * 64,
                out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _, out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _, out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _, out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
                options(nostack),
            );
        }
        let done = chunks * chunk;
        ntcopy16(src.add(done), dst.add(done), bytes - done);
    }
}

/// Fills `bytes` bytes from `p` with the byte `b` by one `rep stosb`, as glibc's memset does
/// beyond `__x86_rep_stosb_threshold` on a CPU with ERMS: the microcode stores whole lines
/// and (on CPUs that implement it so) without first reading them (no read for ownership).
///
/// # Safety
/// `p` is valid for `bytes` bytes. Any x86-64 CPU runs it; it is fast with ERMS.
pub unsafe fn stosb(p: *mut u8, bytes: usize, b: u8) {
    // SAFETY: rep stosb writes exactly [p, p + bytes); the direction flag is clear (the ABI).
    unsafe {
        asm!(
            "rep stosb",
            inout("rdi") p => _,
            inout("rcx") bytes => _,
            in("al") b,
            options(nostack, preserves_flags),
        );
    }
}

/// Copies `bytes` bytes from `src` to `dst` by one `rep movsb`, as glibc's memcpy does
/// between `__x86_rep_movsb_threshold` and `__x86_rep_movsb_stop_threshold` on a CPU
/// with ERMS (or FSRM).
///
/// # Safety
/// Both valid for `bytes` bytes, not overlapping. Any x86-64 CPU runs it; it is fast with
/// ERMS.
pub unsafe fn movsb(src: *const u8, dst: *mut u8, bytes: usize) {
    // SAFETY: rep movsb reads [src, src + bytes) and writes [dst, dst + bytes); the
    // direction flag is clear (the ABI).
    unsafe {
        asm!(
            "rep movsb",
            inout("rsi") src => _,
            inout("rdi") dst => _,
            inout("rcx") bytes => _,
            options(nostack, preserves_flags),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmscope_sys::cpu::CpuFeatures;

    /// A 64-byte aligned buffer of `len` bytes with `guard` bytes either side, filled with a
    /// pattern that differs per byte and per `seed`.
    struct Buf {
        raw: Vec<u8>,
        start: usize,
        guard: usize,
    }

    impl Buf {
        fn new(len: usize, guard: usize, seed: u8) -> Buf {
            let mut raw: Vec<u8> = (0..len + 2 * guard + 64)
                .map(|i| {
                    // A hash of the position, so no shift by a page or a line matches.
                    let h = (i as u64 ^ u64::from(seed) << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    (h >> 56) as u8
                })
                .collect();
            let start = raw.as_mut_ptr().align_offset(64) + guard;
            Buf { raw, start, guard }
        }
        fn ptr(&mut self) -> *mut u8 {
            // SAFETY: start is inside raw.
            unsafe { self.raw.as_mut_ptr().add(self.start) }
        }
        fn body(&self, len: usize) -> &[u8] {
            &self.raw[self.start..self.start + len]
        }
        /// The guard bytes before and after `len` bytes.
        fn guards(&self, len: usize) -> (Vec<u8>, Vec<u8>) {
            (
                self.raw[self.start - self.guard..self.start].to_vec(),
                self.raw[self.start + len..self.start + len + self.guard].to_vec(),
            )
        }
    }

    type Copy = unsafe fn(*const u8, *mut u8, usize);

    /// Every copy kernel this CPU runs, by name.
    fn copies(f: &CpuFeatures) -> Vec<(&'static str, Copy)> {
        let mut v: Vec<(&'static str, Copy)> = vec![
            ("copy16", copy16),
            ("ntcopy16", ntcopy16),
            ("ntcopy16_pages", ntcopy16_pages),
            ("movsb", movsb),
        ];
        if f.avx2 {
            v.extend([
                ("copy32", copy32 as Copy),
                ("ntcopy32", ntcopy32),
                ("ntcopy32_pages", ntcopy32_pages),
            ]);
        }
        if f.avx512f {
            v.extend([
                ("copy64", copy64 as Copy),
                ("ntcopy64", ntcopy64),
                ("ntcopy64_pages", ntcopy64_pages),
            ]);
        }
        v
    }

    /// Lengths around the page kernels' 16 KiB chunks: none, a tail only, whole chunks, and
    /// chunks with every kind of tail (a line, less than a page, pages and lines).
    const LENGTHS: [usize; 9] = [
        0,
        64,
        4096 + 192,
        4 * PAGE,
        4 * PAGE + 64,
        8 * PAGE,
        12 * PAGE + 3 * PAGE + 448,
        16 * PAGE - 64,
        20 * PAGE + 256,
    ];

    /// Each copy kernel makes the destination equal to the source, byte for byte, and
    /// writes nothing outside it; so all agree with each other on every length.
    #[test]
    fn every_copy_kernel_copies_exactly_its_bytes() {
        let f = CpuFeatures::detect();
        for (name, kernel) in copies(&f) {
            for len in LENGTHS {
                let mut src = Buf::new(len, 256, 1);
                let mut dst = Buf::new(len, 256, 2);
                let around = dst.guards(len);
                let want = src.body(len).to_vec();
                // SAFETY: both aligned, valid for len (a multiple of 64), disjoint; the CPU
                // has the kernel's features (copies() filters by them).
                unsafe {
                    kernel(src.ptr(), dst.ptr(), len);
                    core::arch::x86_64::_mm_sfence();
                }
                assert!(
                    dst.body(len) == &want[..],
                    "{name} {len}: destination differs"
                );
                assert_eq!(dst.guards(len), around, "{name} {len}: wrote outside");
                assert_eq!(src.body(len), &want[..], "{name} {len}: changed the source");
            }
        }
    }

    /// The string instructions take any address and length: `rep movsb` and `rep stosb`
    /// at unaligned starts with odd lengths touch exactly their bytes.
    #[test]
    fn string_kernels_cover_unaligned_ends() {
        for (off, len) in [
            (0, 0),
            (1, 1),
            (3, 63),
            (7, 4097),
            (63, 65),
            (13, 3 * PAGE + 5),
        ] {
            let mut src = Buf::new(len + off, 128, 3);
            let mut dst = Buf::new(len + off, 128, 4);
            let before = dst.raw.clone();
            // SAFETY: both valid for off + len bytes, disjoint.
            unsafe { movsb(src.ptr().add(off), dst.ptr().add(off), len) };
            let (s, d) = (src.start + off, dst.start + off);
            assert_eq!(
                &dst.raw[d..d + len],
                &src.raw[s..s + len],
                "movsb {off} {len}"
            );
            assert_eq!(&dst.raw[..d], &before[..d], "movsb {off} {len}: before");
            assert_eq!(
                &dst.raw[d + len..],
                &before[d + len..],
                "movsb {off} {len}: after"
            );

            let mut b = Buf::new(len + off, 128, 5);
            let before = b.raw.clone();
            // SAFETY: valid for off + len bytes.
            unsafe { stosb(b.ptr().add(off), len, 0xA5) };
            let p = b.start + off;
            assert!(
                b.raw[p..p + len].iter().all(|&x| x == 0xA5),
                "stosb {off} {len}"
            );
            assert_eq!(&b.raw[..p], &before[..p], "stosb {off} {len}: before");
            assert_eq!(
                &b.raw[p + len..],
                &before[p + len..],
                "stosb {off} {len}: after"
            );
        }
    }
}
