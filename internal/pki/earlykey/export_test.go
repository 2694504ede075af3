package earlykey

// The file tables, for the test (in package earlykey_test) that holds
// them against the packages that write those files, which this package
// cannot import.
var (
	CertKeyFiles    = certKeyFiles
	KubeconfigFiles = kubeconfigFiles
	JoinCertPhases  = joinCertPhases
	JoinKubeconfigs = joinKubeconfigs
)
