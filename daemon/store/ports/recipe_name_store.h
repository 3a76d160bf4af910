// RecipeNameStore: who owns each recipe name (migration 019); only its owner (or an admin)
// may submit builds under it.
#ifndef FARM_DAEMON_STORE_PORTS_RECIPE_NAME_STORE_H_
#define FARM_DAEMON_STORE_PORTS_RECIPE_NAME_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

// A recipe name and the principal (a token's name) that owns it.
struct RecipeNameRow {
  std::string name;
  std::string owner;
  int64_t claimed_ms = 0;  // when its first owner claimed it
  int64_t updated_ms = 0;  // when it last changed owner
};

class RecipeNameStore {
 public:
  virtual ~RecipeNameStore() = default;

  // The name's row, made with `owner` when the name has none (one statement: of two
  // callers racing for a new name exactly one gets it). Returns the row as it stands.
  virtual Result<RecipeNameRow> ClaimRecipeName(const std::string& name, const std::string& owner,
                                                int64_t now_ms) = 0;
  // nullopt for a name nobody owns.
  virtual Result<std::optional<RecipeNameRow>> GetRecipeName(const std::string& name) = 0;
  // Every owned name, by name.
  virtual Result<std::vector<RecipeNameRow>> ListRecipeNames() = 0;
  // Gives the name to `owner` (a name nobody owned is claimed for it). Returns the new row.
  virtual Result<RecipeNameRow> TransferRecipeName(const std::string& name,
                                                   const std::string& owner, int64_t now_ms) = 0;
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_RECIPE_NAME_STORE_H_
