// A C face for zxing-cpp (Debian libzxing-dev 1.4), limited to the matrix symbologies MediaFarm reads
// with it. Every symbol carries the mf_ prefix; no C++ type crosses this header.
#ifndef MEDIAFARM_ZXING_SHIM_H
#define MEDIAFARM_ZXING_SHIM_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    MF_ZX_AZTEC = 1,
    MF_ZX_DATAMATRIX = 2,
    MF_ZX_PDF417 = 4,
    MF_ZX_QR = 8
};

typedef struct {
    int format;             /* one MF_ZX_* value */
    unsigned char *bytes;   /* the payload, malloc'ed; free with mf_zx_free */
    int byte_count;
    int x[4], y[4];         /* corners in pixels: top left, top right, bottom right, bottom left */
} mf_zx_result;

/* Reads the symbols of `formats` (MF_ZX_* bits) in an 8-bit grayscale picture. Writes at most
   `capacity` results and returns how many; -1 when zxing-cpp failed (exception). Thread-safe. */
int mf_zx_read(const uint8_t *gray, int width, int height, int stride, int formats, int try_harder,
               mf_zx_result *results, int capacity);

void mf_zx_free(mf_zx_result *results, int count);

#ifdef __cplusplus
}
#endif
#endif
