package testutil

import "github.com/mooringhq/mooring/internal/testutil/poll"

// The polling helpers live in the leaf package poll; these names are the same functions,
// for the many tests that already reach them through testutil.
var (
	// Eventually is poll.Eventually.
	Eventually = poll.Eventually
	// Poll is poll.Poll.
	Poll = poll.Poll
)

// DefaultTimeout is poll.DefaultTimeout.
const DefaultTimeout = poll.DefaultTimeout
