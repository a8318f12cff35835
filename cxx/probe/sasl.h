// SASL for a client's sessions (zk.sasl.*): the callbacks through which
// Cyrus SASL gets the user and the password, and a check before the first
// session that names a mechanism this machine lacks, an unreadable password
// file or missing Kerberos credentials, instead of a handle that fails on
// every connection with only its log to say why.
#pragma once

#include <memory>
#include <string>

#include "conf.h"

namespace zkelect {

struct SaslCheck {
    int code = 0;     // kOk, kEAuth (credentials), kEInval (a file), kENotSup (mechanism)
    std::string why;  // names the key and the cause; never the password
};

// Reads zk.sasl.password.file into settings->sasl.password and asks Cyrus
// SASL to start the mechanism as a session would (for GSSAPI that gets a
// service ticket from the KDC). kOk at once without zk.sasl.mechanism.
SaslCheck sasl_check(Settings *settings);

// What a handle's zoo_sasl_params_t points to, for as long as the handle
// lives. Opaque outside sasl.cpp; nullptr without zk.sasl.mechanism.
struct SaslParams;
std::shared_ptr<SaslParams> sasl_params(const Settings::Sasl &sasl);
// The zoo_sasl_params_t * to pass to zookeeper_init_sasl.
void *sasl_params_ptr(SaslParams *p);

}  // namespace zkelect
