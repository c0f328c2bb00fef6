package webhook

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

func TestValidateBackup(t *testing.T) {
	tests := map[string]struct {
		name, schedule string
		wantErr        string // a substring of the error; "" for valid
	}{
		"five fields":                   {name: "nightly", schedule: "0 3 * * *"},
		"steps and ranges":              {name: "nightly", schedule: "*/15 8-18 * * 1-5"},
		"descriptor":                    {name: "nightly", schedule: "@daily"},
		"every minute":                  {name: "nightly", schedule: "* * * * *"},
		"words":                         {name: "nightly", schedule: "every day", wantErr: "spec.schedule"},
		"minute out of range":           {name: "nightly", schedule: "61 * * * *", wantErr: "spec.schedule"},
		"six fields (seconds)":          {name: "nightly", schedule: "0 0 3 * * *", wantErr: "spec.schedule"},
		"time zone prefix":              {name: "nightly", schedule: "CRON_TZ=UTC 0 3 * * *", wantErr: "time zone"},
		"name too long for the CronJob": {name: strings.Repeat("n", MaxBackupNameLength+1), schedule: "@daily", wantErr: "metadata.name"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: tt.name}, Spec: mooringv1.BackupSpec{Schedule: tt.schedule}}
			_, err := BackupValidator{Reviewer: allowAll}.ValidateCreate(asUser("alice"), b)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}
