package middleware

import (
	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/util/validation"
)

// PathParams checks the namespace (:ns, a DNS label) and object name (:name, a DNS
// subdomain) of a path before any handler sees them: fail answers 400 naming the
// parameter. An empty or ".." segment would otherwise reach the API server as a
// different path (every namespace's objects, or a broken request).
func PathParams(fail func(c *gin.Context, param, value string, problems []string)) gin.HandlerFunc {
	return func(c *gin.Context) {
		for _, p := range c.Params {
			var problems []string
			switch p.Key {
			case "ns":
				problems = validation.IsDNS1123Label(p.Value)
			case "name":
				problems = validation.IsDNS1123Subdomain(p.Value)
			default:
				continue
			}
			if len(problems) > 0 {
				fail(c, p.Key, p.Value, problems)
				c.Abort()
				return
			}
		}
		c.Next()
	}
}
