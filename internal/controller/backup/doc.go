// Package backup turns a Backup into a CronJob that dumps a DatabaseCluster into a
// volume on a schedule (and the volume, unless the Backup names an existing claim), one
// Job per distinct value of the backup-now annotation, and, under cleanupPolicy Delete, a
// Job that removes the dumps before the Backup goes. Status is read back from the Jobs:
// those the CronJob creates carry the Backup's labels from the job template.
package backup
