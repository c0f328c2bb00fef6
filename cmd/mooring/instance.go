package main

import (
	"flag"

	"github.com/mooringhq/mooring/internal/controller/database"
)

// bindInstanceManagerFlag is the image database pods copy the instance manager from:
// the operator's own, which the chart passes (the manager is this binary).
func bindInstanceManagerFlag(fs *flag.FlagSet) *string {
	return fs.String("instance-manager-image", database.DefaultInstanceManagerImage,
		"Image of this operator, from which database pods copy their instance manager (`mooring instance`); the chart sets it to the operator's image.")
}
