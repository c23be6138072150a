package topology

// Handle names a scenario: specs take these typed handles instead of bare
// strings, so that a scenario that does not exist fails to compile and a
// handle leads to its configuration in Scenarios() (TestHandles keeps the
// two lists the same).
type Handle string

// Scenario returns the handle's scenario.
func (h Handle) Scenario() (Scenario, bool) { return Lookup(string(h)) }

// The scenarios of Scenarios(), by route prefix /c/<name>/.
const (
	ScPlain         Handle = "plain"
	ScMethodsPost   Handle = "methods-post"
	ScPrio          Handle = "prio"
	ScPrioFirst     Handle = "prio-first"
	ScNorm          Handle = "norm"
	ScIcase         Handle = "icase"
	ScRewrite       Handle = "rewrite"
	ScRwDest        Handle = "rw-dest"
	ScUnsafe        Handle = "unsafe"
	ScUnsafeRefuse  Handle = "unsafe-refuse"
	ScAtt3          Handle = "att3"
	ScAttDefault    Handle = "att-default"
	ScAtt4          Handle = "att4"
	ScRetry5xx      Handle = "retry-5xx"
	ScRetryGateway  Handle = "retry-gateway"
	ScRetry4xx      Handle = "retry-4xx"
	ScRetry404      Handle = "retry-404"
	ScRetry403      Handle = "retry-403"
	ScCfRefuse      Handle = "cf-refuse"
	ScCfExpired     Handle = "cf-expired"
	ScCfWrongname   Handle = "cf-wrongname"
	ScCfUntrusted   Handle = "cf-untrusted"
	ScCfBlackhole   Handle = "cf-blackhole"
	ScCfSyndrop     Handle = "cf-syndrop"
	ScCfReset       Handle = "cf-reset"
	ScCfUnlisted    Handle = "cf-unlisted"
	ScAtt8          Handle = "att8"
	ScAtt9          Handle = "att9"
	ScTmo1          Handle = "tmo1"
	ScTmo2          Handle = "tmo2"
	ScTmo3          Handle = "tmo3"
	ScTmo4          Handle = "tmo4"
	ScTmo5          Handle = "tmo5"
	ScTmo5Cap       Handle = "tmo5-cap"
	ScTmo7          Handle = "tmo7"
	ScTmo8          Handle = "tmo8"
	ScTmo9          Handle = "tmo9"
	ScRdr           Handle = "rdr"
	ScRdrAll        Handle = "rdr-all"
	ScRdrMax3       Handle = "rdr-max3"
	ScRdrCap        Handle = "rdr-cap"
	ScRdrMax1       Handle = "rdr-max1"
	ScRdrTmo        Handle = "rdr-tmo"
	ScRdrMat        Handle = "rdr-mat"
	ScRdrTls        Handle = "rdr-tls"
	ScRdrAllow      Handle = "rdr-allow"
	ScH2            Handle = "h2"
	ScHttps         Handle = "https"
	ScHstRoute      Handle = "hst-route"
	ScHstRouteHttps Handle = "hst-route-https"
	ScHstOrigin     Handle = "hst-origin"
	ScHstBoth       Handle = "hst-both"
	ScHstFo         Handle = "hst-fo"
	ScHstFoOwn      Handle = "hst-fo-own"
	ScHst6          Handle = "hst6"
	ScHstGcs        Handle = "hst-gcs"
	ScPrtH2ToH1     Handle = "prt-h2-to-h1"
	ScPrtHttpsToH2  Handle = "prt-https-to-h2"
	ScPrtPort80     Handle = "prt-port80"
	ScPrtPort443    Handle = "prt-port443"
	ScCol           Handle = "col"
	ScCchStatic     Handle = "cch-static"
	ScCchStaticTtl  Handle = "cch-static-ttl"
	ScCchOrigin     Handle = "cch-origin"
	ScCchForce      Handle = "cch-force"
	ScCchBypass     Handle = "cch-bypass"
	ScCchNeg        Handle = "cch-neg"
	ScCchNegpol     Handle = "cch-negpol"
	ScCchKey        Handle = "cch-key"
	ScCchKeyInc     Handle = "cch-key-inc"
	ScCchKeyNohost  Handle = "cch-key-nohost"
	ScRng           Handle = "rng"
	ScRng4          Handle = "rng4"
	ScShd           Handle = "shd"
	ScShdRegion     Handle = "shd-region"
	ScBktS3         Handle = "bkt-s3"
	ScBktS3Route    Handle = "bkt-s3-route"
	ScBktS3Nohost   Handle = "bkt-s3-nohost"
	ScBktS3Other    Handle = "bkt-s3-other"
	ScBktGcs        Handle = "bkt-gcs"
	ScBktGcsForce   Handle = "bkt-gcs-force"
)

// Handles are every handle, in Scenarios() order.
func Handles() []Handle {
	return []Handle{
		ScPlain,
		ScMethodsPost,
		ScPrio,
		ScPrioFirst,
		ScNorm,
		ScIcase,
		ScRewrite,
		ScRwDest,
		ScUnsafe,
		ScUnsafeRefuse,
		ScAtt3,
		ScAttDefault,
		ScAtt4,
		ScRetry5xx,
		ScRetryGateway,
		ScRetry4xx,
		ScRetry404,
		ScRetry403,
		ScCfRefuse,
		ScCfExpired,
		ScCfWrongname,
		ScCfUntrusted,
		ScCfBlackhole,
		ScCfSyndrop,
		ScCfReset,
		ScCfUnlisted,
		ScAtt8,
		ScAtt9,
		ScTmo1,
		ScTmo2,
		ScTmo3,
		ScTmo4,
		ScTmo5,
		ScTmo5Cap,
		ScTmo7,
		ScTmo8,
		ScTmo9,
		ScRdr,
		ScRdrAll,
		ScRdrMax3,
		ScRdrCap,
		ScRdrMax1,
		ScRdrTmo,
		ScRdrMat,
		ScRdrTls,
		ScRdrAllow,
		ScH2,
		ScHttps,
		ScHstRoute,
		ScHstRouteHttps,
		ScHstOrigin,
		ScHstBoth,
		ScHstFo,
		ScHstFoOwn,
		ScHst6,
		ScHstGcs,
		ScPrtH2ToH1,
		ScPrtHttpsToH2,
		ScPrtPort80,
		ScPrtPort443,
		ScCol,
		ScCchStatic,
		ScCchStaticTtl,
		ScCchOrigin,
		ScCchForce,
		ScCchBypass,
		ScCchNeg,
		ScCchNegpol,
		ScCchKey,
		ScCchKeyInc,
		ScCchKeyNohost,
		ScRng,
		ScRng4,
		ScShd,
		ScShdRegion,
		ScBktS3,
		ScBktS3Route,
		ScBktS3Nohost,
		ScBktS3Other,
		ScBktGcs,
		ScBktGcsForce,
	}
}
