// ProjectNameStore: who owns each distribution (project) name of the index (migration 027).
// A name is PEP 503 normalised by the caller (wheel::NormalizeProjectName); only its owner
// (or an admin) may publish wheels of it.
#ifndef FARM_DAEMON_STORE_PORTS_PROJECT_NAME_STORE_H_
#define FARM_DAEMON_STORE_PORTS_PROJECT_NAME_STORE_H_

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/store/ports/recipe_name_store.h"

namespace farm::store {

// A project name and its owner: the same shape as a recipe name's row.
using ProjectNameRow = RecipeNameRow;

class ProjectNameStore {
 public:
  virtual ~ProjectNameStore() = default;

  // The name's row, made with `owner` when the name has none (one statement: of two
  // callers racing for a new name exactly one gets it). Returns the row as it stands.
  virtual Result<ProjectNameRow> ClaimProjectName(const std::string& name, const std::string& owner,
                                                  int64_t now_ms) = 0;
  // nullopt for a name nobody owns.
  virtual Result<std::optional<ProjectNameRow>> GetProjectName(const std::string& name) = 0;
  // Every owned name, by name.
  virtual Result<std::vector<ProjectNameRow>> ListProjectNames() = 0;
  // Gives the name to `owner` (a name nobody owned is claimed for it). Returns the new row.
  virtual Result<ProjectNameRow> TransferProjectName(const std::string& name,
                                                     const std::string& owner, int64_t now_ms) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_PROJECT_NAME_STORE_H_
