// FFmpeg macros Swift cannot import, and the av_log trampoline. Every symbol carries the mf_ prefix.
// The header uses only standard C types so that no FFmpeg type leaks through this module.
#ifndef MEDIAFARM_SHIMS_H
#define MEDIAFARM_SHIMS_H
#include <stddef.h>
#include <stdint.h>

/// AVERROR_EOF.
int mf_averror_eof(void);
/// AVERROR(EAGAIN).
int mf_averror_eagain(void);
/// AVERROR(errno_value): FFmpeg's negative error code for a POSIX errno.
int mf_averror(int errno_value);
/// AVUNERROR(code): the POSIX errno inside an FFmpeg error code.
int mf_avunerror(int code);
/// AV_NOPTS_VALUE.
int64_t mf_av_nopts_value(void);
/// AV_TIME_BASE (microseconds per second).
int mf_av_time_base(void);

/// Receives one formatted FFmpeg log line (without trailing newline) at an AV_LOG_* level.
/// Called on whatever thread FFmpeg logs from.
typedef void (*mf_log_sink)(int level, const char *line);

/// Routes av_log into `sink` for lines at or below `max_level` (AV_LOG_*); lines are never written to
/// stderr. Lines at AV_LOG_ERROR or more severe are also remembered per thread (see mf_log_last_error).
/// Pass NULL to silence FFmpeg entirely (errors are still remembered).
void mf_log_install(mf_log_sink sink, int max_level);
/// Changes the forwarding level without changing the sink.
void mf_log_set_max_level(int max_level);
/// Copies the calling thread's most recent error line into buf (empty when none). Returns its length.
size_t mf_log_last_error(char *buf, size_t size);
/// Forgets the calling thread's most recent error line.
void mf_log_clear_last_error(void);
/// Starts writing back `length` bytes of `fd` from `offset` to disk without waiting (Linux
/// sync_file_range with SYNC_FILE_RANGE_WRITE), so that a later fsync has little left to do.
/// Returns 0, or -1 with errno set. A no-op returning 0 where the call does not exist.
int mf_start_writeback(int fd, int64_t offset, int64_t length);

/// A counter that grows with every error line logged on any thread.
uint64_t mf_log_error_sequence(void);
/// Copies the most recent error line logged on any thread, if it was logged after `sequence` was
/// read (for codecs whose worker threads log their errors). Returns its length, 0 when none.
size_t mf_log_last_error_since(uint64_t sequence, char *buf, size_t size);

/// The FFmpeg codecs whose libraries are stand-ins in this process: a build such as the container image
/// (script/image) replaces some libraries FFmpeg links with libraries that export the same names and do
/// nothing, each naming the codecs it leaves out in its `mediafarm_left_out_codecs` string. Writes those
/// names, comma-separated, into buf (empty when every library is real); returns the length needed.
size_t mf_left_out_codecs(char *buf, size_t size);

/// Writes one 8-bit plane of `width` x `height` samples turned clockwise by `quarter_turns` (0 to 3)
/// into `dst`, which is `height` x `width` for an odd number of turns. Strides are in bytes.
void mf_turn_plane(const uint8_t *src, int src_stride, int width, int height, uint8_t *dst, int dst_stride, int quarter_turns);

#endif
