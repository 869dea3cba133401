// `ferry passwd` and `ferry token`: make entries for the REST credential files.
//
//   ferry passwd NAME ROLE [--iterations N]   reads the password from stdin (first line; echo off
//                                             on a terminal), prints `NAME:ROLE:pbkdf2-sha256$...`
//                                             for rest.auth.users.file
//   ferry token NAME ROLE                     prints a new random token (32 bytes) and the line
//                                             `NAME:ROLE:<sha256 hex>` for rest.auth.tokens.file
//
// ROLE is viewer, operator or admin. Exit codes: 0 printed; 2 usage error (bad name, role,
// iterations or empty password); 1 the random source failed.
// Thread-safety: meant for main().
#pragma once

namespace ferry::credentials {

// argv[0] is "passwd" / "token".
int runPasswd(int argc, char** argv);
int runToken(int argc, char** argv);

}  // namespace ferry::credentials
