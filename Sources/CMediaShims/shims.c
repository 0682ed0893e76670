#define _GNU_SOURCE
#include <fcntl.h>
#include "CMediaShims.h"
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/log.h>

int mf_averror_eof(void) { return AVERROR_EOF; }
int mf_averror_eagain(void) { return AVERROR(EAGAIN); }
int mf_averror(int errno_value) { return AVERROR(errno_value); }
int mf_avunerror(int code) { return AVUNERROR(code); }
int64_t mf_av_nopts_value(void) { return AV_NOPTS_VALUE; }
int mf_av_time_base(void) { return AV_TIME_BASE; }

static _Atomic(mf_log_sink) installed_sink = NULL;
static atomic_int forward_level = AV_LOG_QUIET;

static _Thread_local char last_error[512];
static atomic_ulong error_sequence = 0;
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static char global_last_error[512];
static unsigned long global_last_sequence = 0;
static _Thread_local int print_prefix = 1;

static void trampoline(void *avcl, int level, const char *fmt, va_list args) {
    int forward = level <= atomic_load(&forward_level);
    int remember = level <= AV_LOG_ERROR;
    if (!forward && !remember) return;

    char line[1024];
    av_log_format_line2(avcl, level, fmt, args, line, sizeof line, &print_prefix);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (n == 0) return;

    if (remember) {
        strncpy(last_error, line, sizeof last_error - 1);
        last_error[sizeof last_error - 1] = '\0';
        pthread_mutex_lock(&global_lock);
        strncpy(global_last_error, line, sizeof global_last_error - 1);
        global_last_error[sizeof global_last_error - 1] = '\0';
        global_last_sequence = atomic_fetch_add(&error_sequence, 1) + 1;
        pthread_mutex_unlock(&global_lock);
    }
    mf_log_sink sink = atomic_load(&installed_sink);
    if (forward && sink) sink(level, line);
}

void mf_log_install(mf_log_sink sink, int max_level) {
    atomic_store(&installed_sink, sink);
    atomic_store(&forward_level, max_level);
    av_log_set_level(max_level > AV_LOG_ERROR ? max_level : AV_LOG_ERROR);
    av_log_set_callback(trampoline);
}

void mf_log_set_max_level(int max_level) {
    atomic_store(&forward_level, max_level);
    av_log_set_level(max_level > AV_LOG_ERROR ? max_level : AV_LOG_ERROR);
}

size_t mf_log_last_error(char *buf, size_t size) {
    if (size == 0) return 0;
    strncpy(buf, last_error, size - 1);
    buf[size - 1] = '\0';
    return strlen(buf);
}

void mf_log_clear_last_error(void) { last_error[0] = '\0'; }

uint64_t mf_log_error_sequence(void) { return atomic_load(&error_sequence); }

size_t mf_log_last_error_since(uint64_t sequence, char *buf, size_t size) {
    if (size == 0) return 0;
    buf[0] = '\0';
    pthread_mutex_lock(&global_lock);
    if (global_last_sequence > sequence) {
        strncpy(buf, global_last_error, size - 1);
        buf[size - 1] = '\0';
    }
    pthread_mutex_unlock(&global_lock);
    return strlen(buf);
}

int mf_start_writeback(int fd, int64_t offset, int64_t length) {
#ifdef SYNC_FILE_RANGE_WRITE
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

// Stand-in libraries (see mf_left_out_codecs) need no other library: only loaded objects without a
// DT_NEEDED entry are asked for the marker (a lookup in an object searches its dependencies too, which for
// the 150 libraries FFmpeg brings would cost milliseconds at each start).
#include <dlfcn.h>
#include <link.h>

struct left_out_walk { const char *found[32]; int count; };

static int needs_nothing(const struct dl_phdr_info *info) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *entry = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; entry->d_tag != DT_NULL; entry++) if (entry->d_tag == DT_NEEDED) return 0;
        return 1;
    }
    return 0;
}

static int left_out_visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct left_out_walk *walk = data;
    if (!info->dlpi_name || !info->dlpi_name[0] || !needs_nothing(info)) return 0;
    void *handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return 0;
    const char *marker = dlsym(handle, "mediafarm_left_out_codecs");
    dlclose(handle);
    if (!marker) return 0;
    for (int i = 0; i < walk->count; i++) if (walk->found[i] == marker) return 0;
    if (walk->count < 32) walk->found[walk->count++] = marker;
    return 0;
}

size_t mf_left_out_codecs(char *buf, size_t size) {
    struct left_out_walk walk = { .count = 0 };
    dl_iterate_phdr(left_out_visit, &walk);
    size_t used = 0;
    if (size) buf[0] = 0;
    for (int i = 0; i < walk.count; i++) {
        size_t length = strlen(walk.found[i]);
        if (!length) continue;
        size_t needed = used + (used ? 1 : 0) + length;
        if (needed + 1 <= size) {
            if (used) buf[used] = ',';
            memcpy(buf + used + (used ? 1 : 0), walk.found[i], length);
            buf[needed] = 0;
        }
        used = needed;
    }
    return used;
}

void mf_turn_plane(const uint8_t *src, int src_stride, int width, int height, uint8_t *dst, int dst_stride, int quarter_turns) {
    switch (quarter_turns & 3) {
    case 0:
        for (int y = 0; y < height; y++) memcpy(dst + (ptrdiff_t)y * dst_stride, src + (ptrdiff_t)y * src_stride, (size_t)width);
        break;
    case 1: // clockwise: source row y becomes column height - 1 - y
        for (int y = 0; y < height; y++) {
            const uint8_t *row = src + (ptrdiff_t)y * src_stride;
            uint8_t *column = dst + (height - 1 - y);
            for (int x = 0; x < width; x++) column[(ptrdiff_t)x * dst_stride] = row[x];
        }
        break;
    case 2:
        for (int y = 0; y < height; y++) {
            const uint8_t *row = src + (ptrdiff_t)y * src_stride;
            uint8_t *out = dst + (ptrdiff_t)(height - 1 - y) * dst_stride;
            for (int x = 0; x < width; x++) out[width - 1 - x] = row[x];
        }
        break;
    case 3: // counter-clockwise: source row y becomes column y, read upwards
        for (int y = 0; y < height; y++) {
            const uint8_t *row = src + (ptrdiff_t)y * src_stride;
            uint8_t *column = dst + y;
            for (int x = 0; x < width; x++) column[(ptrdiff_t)(width - 1 - x) * dst_stride] = row[x];
        }
        break;
    }
}
