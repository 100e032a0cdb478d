// The zip reader alone (torch checkpoints are zip archives): the central directory and its
// records (zip64 included) of an arbitrary file, every entry's payload and CRC checked.
#include "fuzz_support.h"
#include "mt/error.h"
#include "mt/io/zip_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto path = mt::fuzz::write_input(mt::fuzz::as_text(data, size), ".zip");
    try {
        const mt::io::ZipReader zip(path);
        for (const mt::io::ZipEntry& entry : zip.entries()) {
            zip.payload(entry);
            zip.verify_crc(entry);
            zip.at(entry.name);
        }
    } catch (const mt::Error&) {
    }
    return 0;
}
