// V4L2 device queries (ioctl) Swift cannot make directly. Every symbol carries the mf_ prefix; only
// standard C types cross this header.
#ifndef MEDIAFARM_DEVICE_SHIMS_H
#define MEDIAFARM_DEVICE_SHIMS_H
#include <stdint.h>

typedef struct {
    char driver[16];
    char card[32];
    char bus[32];
    /* 1 when the device captures video (V4L2_CAP_VIDEO_CAPTURE, single or multi-planar) */
    int captures;
} mf_v4l2_device;

typedef struct {
    uint32_t fourcc;
    char description[32];
    int compressed;
} mf_v4l2_format;

/* Fills `device` for an open V4L2 file descriptor; 0, or -errno. */
int mf_v4l2_query(int fd, mf_v4l2_device *device);
/* The index-th capture format; 0, or -errno (-EINVAL past the last). */
int mf_v4l2_enum_format(int fd, int index, mf_v4l2_format *format);
/* The index-th frame size of a format: discrete sizes one by one; for a range, its largest size at
   index 0 with *stepwise set. 0, or -errno. */
int mf_v4l2_enum_size(int fd, uint32_t fourcc, int index, uint32_t *width, uint32_t *height, int *stepwise);
/* The index-th frame interval (seconds = numerator / denominator) of a format at a size; a range gives
   its shortest interval at index 0. 0, or -errno. */
int mf_v4l2_enum_interval(int fd, uint32_t fourcc, uint32_t width, uint32_t height, int index,
                     uint32_t *numerator, uint32_t *denominator);
#endif
