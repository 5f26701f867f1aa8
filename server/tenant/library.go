package tenant

import (
	"embed"

	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// library is tenancy's scripts, lua/<name>.lua each: the writes that change a record and its
// index together.
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name: "sluice_tenant",
	Scripts: []redisx.LibraryScript{
		{Name: "token_create"},
		{Name: "token_revoke", Flag: "allow-oom"},
	},
})
