// Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module is built without.
// Declared here from their stable kernel ABI, with an `fp_` prefix on the wrappers.
#ifndef FASTPULL_CLINUX_SHIM_H
#define FASTPULL_CLINUX_SHIM_H

#include <stddef.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/xattr.h>

extern ssize_t splice(int fd_in, long long *off_in, int fd_out, long long *off_out, size_t len,
                      unsigned int flags);
extern int pipe2(int pipefd[2], int flags);
extern int fcntl(int fd, int cmd, ...);

extern int eventfd(unsigned int initval, int flags);

/// eventfd(2), close-on-exec: one descriptor that becomes readable once written to.
static inline int fp_eventfd_cloexec(void) { return eventfd(0, 02000000 /* EFD_CLOEXEC */); }

extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                     unsigned int flags);

/// rename(2) that fails with EEXIST instead of replacing `newpath` (renameat2 with RENAME_NOREPLACE).
/// File systems without it fail with EINVAL.
static inline int fp_rename_noreplace(const char *oldpath, const char *newpath) {
    return renameat2(-100 /* AT_FDCWD */, oldpath, -100, newpath, 1 /* RENAME_NOREPLACE */);
}

/// splice(2) from `fd_in` (a socket or pipe) into `fd_out`; `off_out` is the file offset to write at,
/// or NULL for a pipe. Moves pages rather than copying where the kernel can (SPLICE_F_MOVE).
static inline ssize_t fp_splice(int fd_in, int fd_out, long long *off_out, size_t len) {
    return splice(fd_in, NULL, fd_out, off_out, len, 1 /* SPLICE_F_MOVE */);
}

extern ssize_t copy_file_range(int fd_in, long long *off_in, int fd_out, long long *off_out, size_t len,
                               unsigned int flags);

/// copy_file_range(2): copies `len` bytes between two files inside the kernel (a clone where the
/// file system shares extents), from and to the offsets given, which it advances.
static inline ssize_t fp_copy_file_range(int fd_in, long long *off_in, int fd_out, long long *off_out,
                                         size_t len) {
    return copy_file_range(fd_in, off_in, fd_out, off_out, len, 0);
}

extern int prctl(int option, ...);

/// Names the calling thread (PR_SET_NAME; at most 15 bytes and a NUL are kept).
static inline int fp_name_thread(const char *name) { return prctl(15 /* PR_SET_NAME */, name, 0, 0, 0); }

/// pipe2(2) with O_CLOEXEC.
static inline int fp_pipe_cloexec(int fds[2]) { return pipe2(fds, 02000000 /* O_CLOEXEC */); }

/// Asks for a pipe buffer of `size` bytes (F_SETPIPE_SZ); returns the size granted, or -1.
static inline int fp_set_pipe_size(int fd, int size) { return fcntl(fd, 1031 /* F_SETPIPE_SZ */, size); }

/// The pipe's buffer size (F_GETPIPE_SZ), or -1.
static inline int fp_pipe_size(int fd) { return fcntl(fd, 1032 /* F_GETPIPE_SZ */); }

#endif
