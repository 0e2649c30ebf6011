#include "hmac_sha256.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <riseml/collective_error.hpp>

namespace riseml {

Mac hmac_sha256(std::span<const std::byte> key, std::span<const unsigned char> message) {
  Mac mac{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(),
           message.size(), mac.data(), &len) == nullptr ||
      len != mac.size())
    throw CollectiveError(ErrorKind::system, "HMAC-SHA256 failed (OpenSSL)");
  return mac;
}

bool mac_equal(const Mac& a, const unsigned char* b) {
  return CRYPTO_memcmp(a.data(), b, a.size()) == 0;
}

void random_bytes(unsigned char* out, std::size_t n) {
  if (RAND_bytes(out, static_cast<int>(n)) != 1)
    throw CollectiveError(ErrorKind::system, "RAND_bytes failed (OpenSSL)");
}

}  // namespace riseml
