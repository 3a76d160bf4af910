// PublicationStore: the publisher's outbox (docs/publishing.md): which wheels go to which
// GitHub release or Hugging Face repository, and how far each upload got.
#ifndef FARM_DAEMON_STORE_PORTS_PUBLICATION_STORE_H_
#define FARM_DAEMON_STORE_PORTS_PUBLICATION_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/job_rows.h"
#include "daemon/store/publication_state.h"

namespace farm::store {

// One outbox row of the publisher (docs/publishing.md): a wheel on a GitHub release
// (kind "asset"), a file on the Hugging Face Hub ("file"), or a build's GitHub release
// ("release", artifact_id 0). States: pending, uploading, uploaded, published, failed.
struct PublicationRow {
  int64_t id = 0;
  int64_t build_id = 0;
  int64_t artifact_id = 0;
  std::string target;  // "github" or "hf"
  std::string kind;
  std::string repo;
  std::string ref;    // GitHub tag or Hub revision
  std::string path;   // path in the Hub repository
  std::string label;  // local version label applied to the published wheel
  std::string filename;
  std::string sha256;  // blob of the published bytes; "" until prepared
  int64_t size = 0;
  PublicationState state = PublicationState::kPending;
  int attempts = 0;
  int64_t not_before_ms = 0;
  std::string error;
  std::string remote_id;
  std::string remote_url;
  bool replace_remote = false;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

// An artifact of a succeeded job that the publisher has not decided on yet.
struct PublishCandidate {
  ArtifactRow artifact;
  int64_t build_id = 0;
  std::string cell;  // serialized farm.v1.MatrixCell
};

class PublicationStore {
 public:
  virtual ~PublicationStore() = default;

  // Artifacts of succeeded jobs (the counted attempt or a reused copy) not yet marked
  // scanned, artifact id > after_id ascending, at most `limit`.
  virtual Result<std::vector<PublishCandidate>> ListPublishCandidates(int64_t after_id,
                                                                      int limit) = 0;
  // In one transaction: inserts `rows` with their state and error (a row whose (build,
  // artifact, target) exists is kept as it is) and marks `artifact_id` scanned with
  // `outcome` (nothing is marked for artifact_id 0).
  virtual Status EnqueuePublications(int64_t artifact_id, const std::string& outcome,
                                     const std::vector<PublicationRow>& rows, int64_t now_ms) = 0;
  // Every row of the build, by id.
  virtual Result<std::vector<PublicationRow>> ListPublications(int64_t build_id) = 0;
  // ListPublications of each of `build_ids`, by build id; a build without rows has no
  // entry.
  virtual Result<std::map<int64_t, std::vector<PublicationRow>>> ListPublicationsOfBuilds(
      const std::vector<int64_t>& build_ids) = 0;
  // Rows to work now: "uploading" ones (a crash interrupted them) and "pending" ones whose
  // not_before has passed, by id, at most `limit`.
  virtual Result<std::vector<PublicationRow>> ListDuePublications(int64_t now_ms, int limit) = 0;
  // Stores state, attempts, not_before, error, path and remote id/url of `row` (by id).
  virtual Status UpdatePublication(const PublicationRow& row, int64_t now_ms) = 0;
  // Records the prepared (relabelled) wheel on every row of `artifact_id` that has none.
  virtual Status SetPublicationFile(int64_t artifact_id, const std::string& label,
                                    const std::string& filename, const std::string& sha256,
                                    int64_t size, int64_t now_ms) = 0;
  // Marks the build's GitHub release row and its asset rows published.
  virtual Status MarkReleasePublished(int64_t build_id, const std::string& remote_id,
                                      const std::string& remote_url, int64_t now_ms) = 0;
  // Rows of every build, failed ones first, then the most recently updated, at most
  // `limit`.
  virtual Result<std::vector<PublicationRow>> ListRecentPublications(int limit) = 0;
  // Publication rows per state ("pending", "failed", ...), over every build.
  virtual Result<std::map<std::string, int64_t>> CountPublicationsByState() = 0;
  // Puts the build's rows for `target` ("" for all) back to pending with no attempts and
  // no error; `replace` lets them overwrite remote files that differ. Returns the count.
  virtual Result<int> RequeuePublications(int64_t build_id, const std::string& target, bool replace,
                                          int64_t now_ms) = 0;
  // The wheels farmd put into the Hub repository `repo` at revision `ref` (file rows
  // uploaded or published) whose path starts with `dir`: what its SHA256SUMS lists.
  virtual Result<std::vector<PublicationRow>> ListHubFilesUnder(const std::string& repo,
                                                                const std::string& ref,
                                                                const std::string& dir) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_PUBLICATION_STORE_H_
