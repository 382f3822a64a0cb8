// The one list of HTTP headers that carry credentials. Captures redact them, the request history
// refuses to record them (activity.session_headers), and `check` names them; docs/security.md.
#pragma once
#include <string_view>

namespace kevlaya {

// True for a header whose value is a secret: the known names (Authorization, Proxy-Authorization,
// Cookie, Set-Cookie, X-Api-Key, Api-Key, X-Goog-Api-Key, X-Auth-Token, X-Amz-Security-Token, ...)
// and any name containing "auth", "token", "key", "secret", "password", "cookie", "credential" or
// "signature" (any case), so that a vendor's new credential header is covered without a list edit.
bool is_credential_header(std::string_view name);

}  // namespace kevlaya
