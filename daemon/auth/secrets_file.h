// Secrets for remote services (GITHUB_TOKEN, HF_TOKEN, the AWS_* keys of an S3 blob store,
// WEBHOOK_URL_<NAME> of each webhook target),
// read by farmd only: from a file of KEY=VALUE lines that no other user may read, or from
// FARM_<KEY> environment variables.
// Every value read is registered with the log redactor; none is ever sent to a worker or
// returned by an API.
#ifndef FARM_DAEMON_AUTH_SECRETS_FILE_H_
#define FARM_DAEMON_AUTH_SECRETS_FILE_H_

#include <map>
#include <string>

#include "common/status.h"

namespace farm::auth {

using Secrets = std::map<std::string, std::string>;

// Parses `path`: one KEY=VALUE per line, '#' comments and blank lines ignored, no quoting.
// FailedPrecondition when the file is readable or writable by group or others;
// InvalidArgument with the line number for a malformed line or an unknown key.
Result<Secrets> LoadSecretsFile(const std::string& path);

// Adds FARM_GITHUB_TOKEN / FARM_HF_TOKEN (and the other known keys, FARM_WEBHOOK_URL_<NAME>
// included) from the environment for keys the file lacks.
void AddSecretsFromEnvironment(Secrets* secrets);

}  // namespace farm::auth

#endif  // FARM_DAEMON_AUTH_SECRETS_FILE_H_
