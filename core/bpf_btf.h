/* The minimal kernel BTF of wb.bpf's programs, cached per boot (core/bpf_btf.c). */
#ifndef WB_BPF_BTF_H
#define WB_BPF_BTF_H
#include <stddef.h>

/* The cache file of this boot for the BPF object obj (its ELF, len bytes) into out:
 * wb_cache_dir()/btf-BOOT_ID-HASH; -1 without a cache directory or a boot id. */
int wb_btf_path(const void *obj, size_t len, char *out, size_t n);

/* 0 when the file at path can be given to libbpf as btf_custom_path: a trusted cache file
 * (wb_cache_trusted) that starts with BTF's magic; else *why says why not, and the result is 1
 * when making it failed earlier this boot (*why is that failure's message), -1 otherwise. */
int wb_btf_usable(const char *path, const char **why);

/* Makes the file at path from /sys/kernel/btf/vmlinux with `bpftool gen min_core_btf` (found in
 * PATH, else /usr/sbin), atomically, and removes the files of earlier boots. 0, or -1 with the
 * reason in err; a failure is remembered (path.failed) so that later runs of this boot do not
 * try again. */
int wb_btf_make(const void *obj, size_t len, const char *path, char *err, size_t n);

#endif
