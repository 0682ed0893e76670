#include "CZXingShim.h"
#include <ZXing/ReadBarcode.h>
#include <cstdlib>
#include <cstring>

using namespace ZXing;

extern "C" int mf_zx_read(const uint8_t *gray, int width, int height, int stride, int formats, int try_harder,
                          mf_zx_result *results, int capacity) {
    int n = 0;
    try {
        BarcodeFormats wanted;
        if (formats & MF_ZX_AZTEC) wanted |= BarcodeFormat::Aztec;
        if (formats & MF_ZX_DATAMATRIX) wanted |= BarcodeFormat::DataMatrix;
        if (formats & MF_ZX_PDF417) wanted |= BarcodeFormat::PDF417;
        if (formats & MF_ZX_QR) wanted |= BarcodeFormat::QRCode;
        if (wanted.empty() || capacity <= 0) return 0;
        DecodeHints hints;
        hints.setFormats(wanted);
        hints.setTryHarder(try_harder != 0);
        hints.setTryRotate(true);
        hints.setMaxNumberOfSymbols(static_cast<uint8_t>(capacity > 255 ? 255 : capacity));
        ImageView view(gray, width, height, ImageFormat::Lum, stride);
        auto found = ReadBarcodes(view, hints);
        for (const auto &r : found) {
            if (n >= capacity) break;
            if (!r.isValid()) continue;
            mf_zx_result &out = results[n];
            switch (r.format()) {
            case BarcodeFormat::Aztec: out.format = MF_ZX_AZTEC; break;
            case BarcodeFormat::DataMatrix: out.format = MF_ZX_DATAMATRIX; break;
            case BarcodeFormat::PDF417: out.format = MF_ZX_PDF417; break;
            case BarcodeFormat::QRCode: out.format = MF_ZX_QR; break;
            default: continue;
            }
            const auto &bytes = r.bytes();
            out.byte_count = static_cast<int>(bytes.size());
            out.bytes = static_cast<unsigned char *>(malloc(bytes.size() ? bytes.size() : 1));
            if (!out.bytes) return n;
            n++;   // counted at once: the catch below frees it if anything after this throws
            if (!bytes.empty()) memcpy(out.bytes, bytes.data(), bytes.size());
            const auto &p = r.position();
            const PointI corners[4] = { p.topLeft(), p.topRight(), p.bottomRight(), p.bottomLeft() };
            for (int i = 0; i < 4; i++) { out.x[i] = corners[i].x; out.y[i] = corners[i].y; }
        }
        return n;
    } catch (...) {
        // zxing-cpp threw midway: free what was already handed out, report failure.
        mf_zx_free(results, n);
        return -1;
    }
}

extern "C" void mf_zx_free(mf_zx_result *results, int count) {
    for (int i = 0; i < count; i++) { free(results[i].bytes); results[i].bytes = nullptr; }
}
