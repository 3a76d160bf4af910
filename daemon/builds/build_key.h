// The build key (docs/schedules.md, "Build keys"): the one home of what makes two jobs the
// same build, so that a job is answered from a stored wheel or merged onto an identical
// job in flight only when nothing it is built from differs.
//
//   BuildKey(inputs)             a job's key at submit time, from BuildKeyInputs;
//   KeyWithInputs(base, wheels)  the key of a job that consumes other jobs' wheels, once
//                                they exist (the store settles held jobs with it);
//   ScheduleInputsDigest(req)    whether a schedule's next run has anything new to build.
//
// Every key is a SHA-256 over fields that are length-prefixed or of fixed length, so no
// two different inputs can be spelled alike. "" means unknown (a git ref not resolved, a local path
// without a digest): such a job never matches another. Pure functions; safe from any thread.
#ifndef FARM_DAEMON_BUILDS_BUILD_KEY_H_
#define FARM_DAEMON_BUILDS_BUILD_KEY_H_

#include <string>
#include <vector>

#include "farm/v1/client.pb.h"
#include "farm/v1/types.pb.h"

namespace farm::builds {

// The identity of a source for keys: "git:URL@COMMIT", "archive:SHA256" for an uploaded
// archive (farmd checked its bytes), "content:DIGEST" for a client path, or "" when the
// content is unknown (a client path without a digest, a git ref not resolved).
std::string SourceIdentity(const farm::v1::Source& source, const std::string& source_digest);

// Everything farmd knows at submit time that decides what a job's build produces.
//
// A new input is a field here, written into the key by BuildKey after the others and only
// when it is set, so that the keys of jobs without it stay what they were (and their
// stored wheels keep answering).
struct BuildKeyInputs {
  // The recipe as submitted: its text, its patches, and the torch releases a followed
  // torch axis pinned at submit (they are outside the text).
  const farm::v1::Recipe& recipe;
  // SourceIdentity of the recipe's source; "" makes the key "".
  const std::string& source;
  // The cell: the toolchain fingerprint (placement gives a job only to a worker whose
  // Python, torch and toolkit match it).
  const farm::v1::MatrixCell& cell;
  // A stable-ABI build's job is its wheel and the torches it is proven with: another set
  // of cells to validate in is another job.
  const google::protobuf::RepeatedPtrField<farm::v1::MatrixCell>& validate_in;
  // A provisioned cell's environment is its lock (JobNeeds.lock_digest), and a stable-ABI
  // build's the lock of each cell it is validated in (JobNeeds.validate_locks): what
  // upstream had when they were resolved. The same locks again are the same build; a new
  // release of anything in them is a new one. Null or empty: none.
  const std::string* lock_digest = nullptr;
  const google::protobuf::Map<std::string, std::string>* validate_locks = nullptr;
};

// The key of a job; "" when its source is unknown.
std::string BuildKey(const BuildKeyInputs& inputs);

// The key of a job that consumes wheels: a SHA-256 over its key without them (`key_base`,
// a BuildKey) and the sha256 of each consumed wheel, in any order (they are sorted), so a
// new wheel gives a new key. "" when `key_base` is "".
std::string KeyWithInputs(const std::string& key_base, std::vector<std::string> wheel_sha256s);

// A digest of every input of a scheduled build's request (recipe text, patches, source
// identity, matrix, and the digest of each recipe it requires); "" when a source is
// unknown, so that such a schedule always builds.
std::string ScheduleInputsDigest(const farm::v1::SubmitBuildRequest& req);

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_BUILD_KEY_H_
