#include "CDeviceShims.h"
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/videodev2.h>

static int xioctl(int fd, unsigned long request, void *arg) {
    int r;
    do { r = ioctl(fd, request, arg); } while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

static void copy_text(char *dst, size_t size, const void *src, size_t src_size) {
    size_t n = strnlen((const char *)src, src_size);
    if (n >= size) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

int mf_v4l2_query(int fd, mf_v4l2_device *device) {
    struct v4l2_capability cap;
    memset(&cap, 0, sizeof cap);
    int r = xioctl(fd, VIDIOC_QUERYCAP, &cap);
    if (r < 0) return r;
    uint32_t caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
    copy_text(device->driver, sizeof device->driver, cap.driver, sizeof cap.driver);
    copy_text(device->card, sizeof device->card, cap.card, sizeof cap.card);
    copy_text(device->bus, sizeof device->bus, cap.bus_info, sizeof cap.bus_info);
    device->captures = (caps & (V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_VIDEO_CAPTURE_MPLANE)) != 0;
    return 0;
}

int mf_v4l2_enum_format(int fd, int index, mf_v4l2_format *format) {
    struct v4l2_fmtdesc desc;
    memset(&desc, 0, sizeof desc);
    desc.index = (uint32_t)index;
    desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    int r = xioctl(fd, VIDIOC_ENUM_FMT, &desc);
    if (r < 0) return r;
    format->fourcc = desc.pixelformat;
    copy_text(format->description, sizeof format->description, desc.description, sizeof desc.description);
    format->compressed = (desc.flags & V4L2_FMT_FLAG_COMPRESSED) != 0;
    return 0;
}

int mf_v4l2_enum_size(int fd, uint32_t fourcc, int index, uint32_t *width, uint32_t *height, int *stepwise) {
    struct v4l2_frmsizeenum size;
    memset(&size, 0, sizeof size);
    size.index = (uint32_t)index;
    size.pixel_format = fourcc;
    int r = xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &size);
    if (r < 0) return r;
    if (size.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
        *width = size.discrete.width;
        *height = size.discrete.height;
        *stepwise = 0;
    } else {
        if (index > 0) return -EINVAL;
        *width = size.stepwise.max_width;
        *height = size.stepwise.max_height;
        *stepwise = 1;
    }
    return 0;
}

int mf_v4l2_enum_interval(int fd, uint32_t fourcc, uint32_t width, uint32_t height, int index,
                     uint32_t *numerator, uint32_t *denominator) {
    struct v4l2_frmivalenum ival;
    memset(&ival, 0, sizeof ival);
    ival.index = (uint32_t)index;
    ival.pixel_format = fourcc;
    ival.width = width;
    ival.height = height;
    int r = xioctl(fd, VIDIOC_ENUM_FRAMEINTERVALS, &ival);
    if (r < 0) return r;
    if (ival.type == V4L2_FRMIVAL_TYPE_DISCRETE) {
        *numerator = ival.discrete.numerator;
        *denominator = ival.discrete.denominator;
    } else {
        if (index > 0) return -EINVAL;
        *numerator = ival.stepwise.min.numerator;
        *denominator = ival.stepwise.min.denominator;
    }
    return 0;
}
